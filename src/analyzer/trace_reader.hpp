// Streaming reader of OTF2 archives: global definitions resolved once, then every event of every
// location handed to a handler in global time order. Nothing of the event stream is kept here, so
// an archive larger than memory reads in the memory of its open chunks.
#pragma once

#include "analyzer/recording_notes.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::analyze {

// Every problem with an archive (missing, truncated, corrupt, not OTF2) is reported as one of
// these, with a one-line message naming the file or the definition at fault.
class trace_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

enum class category : uint8_t { mpi, user };

struct region_info {
  std::string name;
  category cat = category::user;
  std::string file; // the region's own definition site (used when an Enter has no call site)
  uint32_t line = 0;
};

struct call_site {
  std::string file;
  uint32_t line = 0;
};

// A communicator as the set of world ranks it spans; local rank i is world_ranks[i].
struct communicator {
  std::string name;
  std::vector<uint32_t> world_ranks;
};

inline constexpr uint32_t no_call_site = UINT32_MAX;
inline constexpr uint32_t no_root = UINT32_MAX;

// Global definitions, with references turned into dense indices: location index == rank.
struct definitions {
  std::vector<region_info> regions;      // by OTF2 region reference
  std::vector<call_site> call_sites;     // by OTF2 source-code-location reference
  std::vector<communicator> comms;       // by OTF2 comm reference
  std::vector<uint64_t> location_ids;    // OTF2 location reference of rank i
  std::vector<uint64_t> declared_events; // events the definitions promise for rank i
  uint64_t timer_resolution = 1'000'000'000;
  uint64_t global_offset = 0;
  uint64_t trace_length = 0;
  std::string archive;   // path of the anchor file
  std::string creator;   // what wrote it ("Strata 0.1.0"); empty when the archive does not say
  recording_notes notes; // events the tracer dropped, calls it counted

  [[nodiscard]] double seconds(uint64_t timestamp) const {
    return static_cast<double>(timestamp - global_offset) / static_cast<double>(timer_resolution);
  }
  [[nodiscard]] size_t ranks() const { return location_ids.size(); }
};

// Events, decoded: `rank` is the location's dense index, `comm` an index into definitions.comms;
// peers and roots are world ranks (translated through the communicator); a collective without a
// root has root == no_root.
class event_handler {
public:
  virtual ~event_handler() = default;
  virtual void enter(uint32_t rank, uint64_t time, uint32_t region, uint32_t site) = 0;
  virtual void leave(uint32_t rank, uint64_t time, uint32_t region) = 0;
  virtual void send(uint32_t rank, uint64_t time, uint32_t receiver, uint32_t comm, uint32_t tag,
                    uint64_t bytes) = 0;
  virtual void isend(uint32_t rank, uint64_t time, uint32_t receiver, uint32_t comm, uint32_t tag,
                     uint64_t bytes, uint64_t request) = 0;
  // The message of one start of a partitioned request (every partition), which the trace marks
  // with the `strata:partitioned` attribute: an isend to every handler that does not tell them
  // apart.
  virtual void partitioned_isend(uint32_t rank, uint64_t time, uint32_t receiver, uint32_t comm,
                                 uint32_t tag, uint64_t bytes, uint64_t request) {
    isend(rank, time, receiver, comm, tag, bytes, request);
  }
  virtual void isend_complete(uint32_t rank, uint64_t time, uint64_t request) = 0;
  virtual void irecv_request(uint32_t rank, uint64_t time, uint64_t request) = 0;
  virtual void recv(uint32_t rank, uint64_t time, uint32_t sender, uint32_t comm, uint32_t tag,
                    uint64_t bytes) = 0;
  virtual void irecv(uint32_t rank, uint64_t time, uint32_t sender, uint32_t comm, uint32_t tag,
                     uint64_t bytes, uint64_t request) = 0;
  virtual void request_cancelled(uint32_t rank, uint64_t time, uint64_t request) = 0;
  virtual void collective_end(uint32_t rank, uint64_t time, uint32_t op, uint32_t comm,
                              uint32_t root, uint64_t sent, uint64_t received) = 0;
  // A one-sided operation (OTF2's RmaPut, RmaGet, RmaAtomic) from this rank, the origin, to
  // `target`, a world rank (translated through its window's communicator); `kind` a
  // common::pair_kind (put, get or accumulate), `bytes` those put, brought back or accumulated.
  virtual void one_sided(uint32_t /*rank*/, uint64_t /*time*/, uint8_t /*kind*/,
                         uint32_t /*target*/, uint64_t /*bytes*/) {}
  // Program begin and end (Score-P writes them): they bound a rank's time.
  virtual void program_event(uint32_t /*rank*/, uint64_t /*time*/) {}
};

// The name of the attribute whose SourceCodeLocation value is the call site of an Enter.
inline constexpr const char* call_site_attribute = "strata:call_site";
// The name of the attribute (a uint8, 1) that marks the MpiIsend and MpiIrecvRequest of a
// partitioned request's start.
inline constexpr const char* partitioned_attribute = "strata:partitioned";

class trace_reader {
public:
  // Opens the archive (a directory holding traces.otf2, or the anchor file itself) and reads its
  // global and local definitions. Throws trace_error.
  explicit trace_reader(const std::string& path);
  ~trace_reader();
  trace_reader(const trace_reader&) = delete;
  trace_reader& operator=(const trace_reader&) = delete;

  [[nodiscard]] const definitions& defs() const { return defs_; }

  // Streams all events in global time order into `handler`; returns the number of events read.
  // Throws trace_error when an event file is missing, truncated or corrupt. An event that refers
  // to what the definitions do not hold is left out and counted in warnings().
  uint64_t read_events(event_handler& handler);
  [[nodiscard]] const std::vector<std::string>& warnings() const { return warnings_; }
  // The same for the ranks [first, last) only: OTF2 opens just their event files, so memory is
  // their share's (one chunk per location).
  uint64_t read_events(event_handler& handler, uint32_t first, uint32_t last);

  // The same in steps: open_events, then read_some until it returns 0 (at most `count` records
  // each time; every record counts, also those the handler has no callback for), then
  // close_events, which checks what was read against the definitions and returns the number of
  // records. Each throws trace_error as read_events does.
  void open_events(event_handler& handler, uint32_t first, uint32_t last);
  uint64_t read_some(uint64_t count);
  uint64_t close_events();

  struct state;

private:
  definitions defs_;
  std::vector<std::string> warnings_;
  state* state_ = nullptr;
};

// Where the anchor file of an archive given as a directory or a file is.
std::string anchor_path(const std::string& path);

} // namespace strata::analyze
