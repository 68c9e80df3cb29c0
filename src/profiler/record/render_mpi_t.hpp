// The report's tables of the record's "mpi_t" section: the MPI library's performance variables
// over the ranks, the ones no rank could read and why, and the control variables the job's
// environment set. Plain rows; render.cpp escapes and lays them out per format.
#pragma once

#include "profiler/record/mpi_t_record.hpp"

#include <string>
#include <vector>

namespace strata::record {

struct mpi_t_table {
  std::string title;
  bool headed = false; // a first row of column headings
  std::vector<std::vector<std::string>> rows;
  std::string note;
};

std::vector<mpi_t_table> mpi_t_tables(const mpi_t_section& section);

// A value as the record holds it: integers exactly, doubles shortest.
std::string pvar_text(const pvar_number& number);

} // namespace strata::record
