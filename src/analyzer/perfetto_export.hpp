// Export of an OTF2 trace in the Chrome trace-event JSON format (the JSON Object Format with
// "traceEvents") that ui.perfetto.dev and Chromium's trace viewers open: one process per rank
// (pid = rank + 1, since both viewers treat pid 0 as the kernel's idle task) with one thread,
// MPI calls and annotated regions as nested complete ("X") slices with their arguments, each
// matched message as a flow ("s" at the send, "f" at the operation that completed the receive),
// and each wait state of the analysis as a slice nested in the operation that lost the time,
// from its enter on. The analysis (analysis.hpp) reads the trace and matches the messages; the
// writer only listens, and streams what it hears to files, so memory is the analysis's.
//
// The file is written in two sections: first every operation's slice, then the flows and the
// wait states. Both viewers order events of one timestamp by their place in the file, and a wait
// state starts where its operation does: it must come after it.
#pragma once

#include "analyzer/analysis.hpp"
#include "analyzer/trace_reader.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

namespace strata::analyze {

// What goes into the file: the operations of ranks [first_rank, last_rank] that overlap the time
// window (seconds from the start of the trace), whole, with their ancestors; flows whose two ends
// are both in; the wait states of the operations in.
struct perfetto_selection {
  double from_s = 0;
  double to_s = std::numeric_limits<double>::infinity();
  uint32_t first_rank = 0;
  uint32_t last_rank = UINT32_MAX; // inclusive; UINT32_MAX: the trace's last
};

// "A-B" or "A" into the selection's ranks; throws std::invalid_argument with a one-line reason.
void parse_rank_range(const std::string& text, perfetto_selection& selection);
// Checks the selection against the trace (ranks that exist, a window that is one); throws
// trace_error naming the option.
void check_selection(const definitions& defs, const perfetto_selection& selection);

struct perfetto_counts {
  uint64_t slices = 0; // operations written
  uint64_t flows = 0;  // messages written as flows
  uint64_t waits = 0;  // wait states written
};

struct perfetto_result {
  std::string file;
  uint32_t ranks = 0; // ranks written
  perfetto_counts counts;
  std::string truncated; // the trace is truncated (analyzer/recording_notes.hpp); empty if not
};

// Reads the trace once and writes `out` (through out.partial, renamed when complete, so a
// failure leaves no half file). Throws trace_error for a bad archive or selection,
// std::runtime_error when the file cannot be written.
perfetto_result export_perfetto(const std::string& trace, const std::string& out,
                                const perfetto_selection& selection);

// What the export prints: the file and what it holds on stdout, the truncation and an empty
// selection as warnings on stderr.
void print_perfetto_result(const perfetto_result& result);

// The parts of export_perfetto, for several processes that share the ranks
// (perfetto_export_mpi.hpp).

// A file of the export: written through a buffer, by offset when the parts are put together.
class perfetto_stream {
public:
  // Creates `path` (truncating it), or with an empty path an unnamed scratch file beside
  // `near`, removed when closed.
  perfetto_stream(const std::string& path, const std::string& near);
  ~perfetto_stream();
  perfetto_stream(const perfetto_stream&) = delete;
  perfetto_stream& operator=(const perfetto_stream&) = delete;

  void append(const char* data, size_t size);
  void append(const std::string& text) { append(text.data(), text.size()); }
  void flush();
  [[nodiscard]] uint64_t size() const { return written_ + buffered_.size(); }
  // Copies this (flushed) file's bytes into `to` at offset `at`.
  void copy_into(int to, uint64_t at, const std::string& to_name);
  [[nodiscard]] int fd() const { return fd_; }

private:
  std::string name_;
  int fd_ = -1;
  std::string buffered_;
  uint64_t written_ = 0;
};

// The file's beginning (with the metadata naming each selected rank's process and thread) and
// its end (with what the file was made from).
std::string perfetto_header(const definitions& defs, const perfetto_selection& selection);
std::string perfetto_footer(const definitions& defs, const perfetto_selection& selection);

// The writer of one process's share: hears the events of its ranks and the analysis's graph, and
// writes slices into one stream and flows and wait states into the other. Flow ids are
// id_offset + k * id_step (k = 1, 2, ...), distinct across processes.
class perfetto_writer {
public:
  perfetto_writer(const definitions& defs, const perfetto_selection& selection, uint32_t first_rank,
                  uint32_t last_rank, perfetto_stream& slices, perfetto_stream& links,
                  uint64_t id_offset, uint64_t id_step);
  ~perfetto_writer();
  perfetto_writer(const perfetto_writer&) = delete;
  perfetto_writer& operator=(const perfetto_writer&) = delete;

  event_handler& events();
  graph_observer& observer();
  // Flushes both streams; the counts of what was written.
  perfetto_counts finish();

  struct impl;

private:
  std::unique_ptr<impl> impl_;
};

} // namespace strata::analyze
