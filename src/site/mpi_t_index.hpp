// The store's index of what the MPI library reported through MPI_T (the record's `mpi_t`):
// the control variables each job ran with and its performance variables, in tables a site can
// query across jobs (schema version 9, site/schema.hpp; `strata site mpi-t`, site/mpi_t_query.hpp).
//
// A job's control variables are a few hundred name = value pairs, the same for nearly every job
// of one MPI installation and environment: each distinct set is stored once, and a job names
// its set. The set's text (settings_text) is its identity; the digest is what the store's
// unique key compares.
#pragma once

#include "profiler/record/mpi_t_record.hpp"
#include "site/mpi_t_settings.hpp"
#include "site/stored_job.hpp"

#include <vector>

namespace strata::site {

class store;
struct insert_result;

// What the store indexes of a record's MPI_T section.
mpi_t_rows mpi_t_rows_of(const record::mpi_t_section& section);
// The same with the control variables given apart, in name order (record::parse_record_lean):
// the section's own map is not read.
mpi_t_rows mpi_t_rows_of(const record::mpi_t_section& section,
                         const std::vector<record::cvar_view>& cvars);

// Inside store::insert's transaction: the new jobs' sets (those not stored yet added with
// their text), their rows in job_mpi_t and their performance variables.
void add_mpi_t(store& db, const std::vector<stored_job>& jobs, const insert_result& r);

// Migration 10: the sets of version 9 (a row per variable in mpi_t_setting_values) as their
// texts, that table dropped.
void keep_settings_as_text(store& db);
// Migration 10 from a store older than 9: add_mpi_t for every job stored before, from the
// records themselves.
void fill_mpi_t(store& db);

} // namespace strata::site
