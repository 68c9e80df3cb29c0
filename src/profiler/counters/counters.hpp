// Event counters for the always-on profiler: events chosen by STRATA_COUNTERS, opened through
// PAPI where it works and through Linux perf_event otherwise, read once per MPI boundary and
// split into "inside MPI" and "in the application" (Rabenseifner, "Automatic MPI Counter
// Profiling", section VIII). No MPI here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::counters {

struct event_list {
  std::vector<std::string> names; // in the order given
  std::string error;              // one line naming the problem; empty when fine
  bool ok() const { return error.empty(); }
};

// "cycles,task-clock page-faults": names separated by commas and/or blanks. Blank text is an
// empty list; an empty name ("a,,b") or a name given twice (case-insensitively, as PAPI and
// libpfm match names) is an error.
event_list parse_event_list(std::string_view text);

// The counters that could be opened, for the calling thread only (the profiler opens them in
// the thread that calls MPI_Init). A set counts from open() on and is never reset: read()
// behaves like a clock, which is what split_accumulator expects.
class counter_set {
public:
  counter_set() = default;
  counter_set(counter_set&& other) noexcept;
  counter_set& operator=(counter_set&& other) noexcept;
  counter_set(const counter_set&) = delete;
  counter_set& operator=(const counter_set&) = delete;
  ~counter_set();

  // Opens what it can of `names`, in their order, and appends one line to `problems` per
  // thing that went wrong (an event missing, PAPI unusable); the rest are still counted.
  // Names are tried in PAPI first (presets, libpfm4 native names), then as a Linux generic
  // event (cycles, instructions, cache-references, cache-misses, branches, branch-misses,
  // task-clock, cpu-clock, page-faults, context-switches, cpu-migrations, minor-faults,
  // major-faults) or raw "perf:TYPE:CONFIG". The perf_event ones form one group.
  static counter_set open(const std::vector<std::string>& names,
                          std::vector<std::string>& problems);

  size_t size() const { return names_.size(); }
  const std::string& name(size_t i) const { return names_[i]; }
  // "ns" for task-clock and cpu-clock, "events" for the rest.
  const char* unit(size_t i) const { return ns_[i] ? "ns" : "events"; }

  // Current value of every counter into values[0..size()). One PAPI_read or one read() of the
  // perf group (both only when names needed both), no allocation: it runs at every MPI call.
  bool read(uint64_t* values) noexcept;

private:
  struct slot {
    bool papi; // else the perf group
    uint32_t pos;
  };
  void close() noexcept;

  std::vector<std::string> names_;
  std::vector<bool> ns_;
  std::vector<slot> slots_;
  std::vector<int> fds_;           // perf group, leader first
  std::vector<uint64_t> perf_buf_; // PERF_FORMAT_GROUP layout: nr, value[nr]
  int papi_set_ = -1;              // PAPI_NULL
  std::vector<long long> papi_buf_;
};

// That paper's method for clock-like counters: one subtraction and one addition per counter
// and boundary. Application = from start() to the first enter_mpi() and between leave_mpi()
// and the next enter_mpi(); MPI = the rest. Calls nested inside MPI (a collective calling
// MPI_Send through the profiled interface) only change the depth, so nothing is counted twice.
struct split_accumulator {
public:
  explicit split_accumulator(size_t n = 0) : last_(n), in_(n), out_(n) {}

  void start(const uint64_t* now) noexcept;     // at MPI_Init: zero, start outside MPI
  void enter_mpi(const uint64_t* now) noexcept; // before an MPI call
  void leave_mpi(const uint64_t* now) noexcept; // after its return; unmatched ones are ignored
  // Brings both sums up to `now` (into MPI if inside a call); may be called again for
  // subtotals (MPI_Pcontrol) without disturbing later boundaries.
  void finish(const uint64_t* now) noexcept;

  size_t size() const { return in_.size(); }
  unsigned depth() const { return depth_; }
  uint64_t in_mpi(size_t i) const { return in_[i]; }
  uint64_t outside_mpi(size_t i) const { return out_[i]; }

private:
  void add_to(std::vector<uint64_t>& sums, const uint64_t* now) noexcept;
  std::vector<uint64_t> last_, in_, out_;
  unsigned depth_ = 0;
};

} // namespace strata::counters
