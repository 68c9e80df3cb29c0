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
#include "site/stored_job.hpp"

#include <string>
#include <utility>
#include <vector>

namespace strata::site {

class store;
struct insert_result;

// One control variable of a set.
struct setting {
  std::string name, value;
  bool from_environment = false; // the job's environment set it
};

// The set's text: one line per variable in name order, its name, value and whether the
// environment set it apart by separators no MPI name or value holds (any that does is
// replaced), and back.
std::string settings_text(const std::vector<setting>& settings);
std::vector<setting> settings_of_text(const std::string& text);

// What the store indexes of a record's MPI_T section.
mpi_t_rows mpi_t_rows_of(const record::mpi_t_section& section);

// Inside store::insert's transaction: the new jobs' sets (those not stored yet added), their
// rows in job_mpi_t and their performance variables.
void add_mpi_t(store& db, const std::vector<stored_job>& jobs, const insert_result& r);

// Migration 9: the same for every job stored before, from the records themselves.
void fill_mpi_t(store& db);

} // namespace strata::site
