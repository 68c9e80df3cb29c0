// The site store's schema, version 16. Migrations (schema.cpp) take a store from any earlier
// version to this one when it is opened; docs/site-setup.md shows the tables to administrators.
//
//   schema_version(version)               one row per applied migration
//   jobs(job_id, job_key UNIQUE, ...)     one row per job: identity, owner, figures (job_row)
//   job_records(job_id, record)           the record's JSON, deflated (pack_record)
//   job_routines(job_id, routine, ...)    one row per job and MPI routine (routine_row), owner
//                                         and end_time copied in
//   day_routines(day, owner, routine)     per UTC day: routine sums of each owner
//   day_classes(day, owner, language, ranks, cpu_class)   per day: job sums and routine-group
//                                         usage of each owner, language, size, CPU-time class
//   web_tokens(token_hash, uid, ...)      (2) login tokens of the web interface, SHA-256 only
//   (3: PostgreSQL drops the foreign keys of job_routines and job_records)
//   day_mpi(day, mpi_bucket)              (4) jobs per day and MPI % bucket (mpi_bucket)
//   day_owners(day, owner)                (4) job sums per day and owner
//   day_shapes(day, language, size_class, cpu_class)   (4) job sums and group usage per day,
//                                         language, size class and CPU-time class
//   (4: covering indexes of the jobs lists; 5: per-owner sort indexes, dropped again by 6)
//   executables(executable)               (6) distinct paths: what a search looks up first
//   (6: jobs_by_executable, jobs_record_id; 7: job_routines loses its end_time index;
//   11: jobs_period and jobs_owner_list hold mpi_time_s)
//   programs(program_id, owner, executable, arguments)    (8) what models and regressions
//                                         group runs by (site/programs.hpp)
//   program_runs(program_id, ranks, end_time, job_id)     (8) each job's time per rank
//   regressions(job_id, ...)              (8) jobs flagged at ingest, and why
//   ingests(ingest_id, ...)               (8) one row per ingest: the store's health
//   mpi_t_settings(settings_id, digest, settings)   (9) each distinct set of MPI_T control
//                                         variables; (10) its text (site/mpi_t_settings.hpp),
//                                         where version 9 had a row per variable
//   job_mpi_t(job_id, settings_id, ...)   (9) the set each job ran with (site/mpi_t_index.hpp)
//   job_pvars(name, job_id, ...)          (9) each job's MPI_T performance variables
//   (12: jobs hold the Slurm account and partition; 13: rank 0's exit code, NULL: not known)
//   job_pairs(job_id, kind, from_rank, to_rank, ...)   (14) each job's point-to-point pairs
//   job_unlisted_pairs(job_id, ...)       (14) the pairs a large job's record left out
//   (15: an index of the jobs whose exit code is known and not 0)
//   job_collectives(job_id, communicator, members, ...)   (16) each job's collectives per
//                                         communicator (site/job_collectives.hpp)
//   job_collective_members(job_id, communicator, member_rank, ...)   (16) per member, for
//                                         communicators of up to 32 members
//   job_collectives_elsewhere(job_id, ...)   (16) collectives a record left out or could not
//                                         attribute to a communicator
#pragma once

namespace strata::site {

inline constexpr int store_schema_version = 16;

} // namespace strata::site
