// `strata site synth`: synthetic job records for scale tests and demonstrations, valid
// strata.job/1 records with plausible distributions: a few users dominate the machine (Zipf),
// job sizes favour powers of two, many short test runs and fewer long production runs (which
// are more often Fortran), each user with an application profile of MPI routines. The same
// seed gives the same records.
#pragma once

#include "profiler/record/record.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace strata::site {

struct synth_options {
  std::int64_t count = 1000;
  std::uint64_t seed = 1;
  int users = 60;
  std::int64_t first_uid = 20000;
  std::int64_t from = 0, to = 0; // job end times are spread over [from, to); 0: the last 28 days
  bool compact = true;           // one-line JSON (smaller files, faster to ingest)
  bool mpi_t = false;            // each record carries an MPI_T section (synth_mpi_t)
};

// An MPI_T section shaped like a real Open MPI 4.1 job's (control variables, the launcher's
// settings with this job's launch identity, performance variables read and unread), for a job
// of `ranks` ranks of user number `user`; the same seed gives the same section.
record::mpi_t_section synth_mpi_t(std::uint64_t job_seed, int ranks, int user);

// Record number `index` of the set (independent of the others, so sets can be made in parts).
record::job_record synth_record(const synth_options& options, std::int64_t index);

struct synth_result {
  std::int64_t written = 0;
  std::string error; // first failure; writing stops there
};

// Writes `count` records into `dir` as <job id>.json. Run as root with `chown`, each file is
// given to its record's uid, as the profile module's files would belong to the job's user.
synth_result write_synth(const synth_options& options, const std::string& dir, bool chown);

class store;
// Puts the records straight into a store, as ingest would with each file owned by the
// record's uid (fills a store for report benchmarks without a million files).
synth_result store_synth(const synth_options& options, store& db);

} // namespace strata::site
