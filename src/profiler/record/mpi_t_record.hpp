// The record's "mpi_t" key (docs/job-record.md): what the MPI library counted itself, read
// through the MPI tool information interface (MPI_T): each performance variable reduced over
// the ranks, and the control variables as rank 0's library reports them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace strata::record {

// A performance variable's value as its datatype holds it: unsigned and signed integers exact
// (counters may pass 2^53), floating-point values as doubles.
struct pvar_number {
  std::variant<std::uint64_t, std::int64_t, double> value{std::uint64_t{0}};
  bool operator==(const pvar_number&) const = default;
};

// One performance variable over the ranks. A rank's value is its elements combined (a variable
// bound to a communicator has one per peer): summed, except watermarks (the highest, the
// lowest) and states and percentages (the highest).
struct mpi_t_pvar {
  std::string name, description;
  std::string var_class;      // "counter", "size", "level", "highwatermark", ... ("class")
  std::string binding;        // "none", "communicator", "window", ...
  std::string datatype;       // "unsigned long long", "double", ...
  std::uint64_t elements = 0; // values per rank (of rank 0)
  std::uint64_t ranks = 0;    // ranks that read it; 0: not read (see `unread`)
  std::string unread;         // why no rank read it; empty when read
  pvar_number sum, min, max;  // over the ranks that read it
  std::uint64_t min_rank = 0, max_rank = 0; // the lowest rank on ties
  bool operator==(const mpi_t_pvar&) const = default;
};

// A control variable's name and value, seen in a text or a section that outlives the view.
using cvar_view = std::pair<std::string_view, std::string_view>;

struct mpi_t_section {
  std::string problem; // one line when MPI_T could not be used or the ranks disagreed; else ""
  std::optional<std::string> not_read; // why nothing was read (a job too short); absent if read
  // Absent: not known, MPI_T was not started (not_read or problem says why).
  std::optional<std::uint64_t> pvars_exposed, cvars_exposed;
  std::optional<std::uint64_t> events_exposed; // absent: the MPI has no MPI_T events (before 4.0)
  std::vector<mpi_t_pvar> pvars;               // in the library's index order
  std::map<std::string, std::string> cvars;    // name -> value as text (rank 0)
  std::vector<std::string> cvars_set;          // names the job's environment set (rank 0)
  bool operator==(const mpi_t_section&) const = default;
};

} // namespace strata::record
