// Strata's one OTF2 writer: archives with the conventions of docs/tracing.md (those of Score-P,
// so that Vampir, Scalasca and `strata analyze` read them). One location per rank, numbered as
// the ranks; MPI regions hold MpiSend/MpiRecv/MpiIsend/... records, collectives are bracketed by
// MpiCollectiveBegin/End, the call site of an Enter is its `strata:call_site` attribute, each
// location's local definitions carry its clock offsets, and the global definitions describe the
// job (ranks on hosts, regions, call sites, communicators as world ranks, what each rank dropped).
//
// The trace module writes its own location under OTF2's MPI collectives (which it sets on
// handle()); the analyzer's trace builder writes every location of an archive in one process.
// No MPI here. Every call returns OTF2's error code; the first failure is also kept.
#pragma once

#include <otf2/otf2.h>

#include <cstdarg>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace strata::trace {

inline constexpr uint32_t no_call_site = OTF2_UNDEFINED_SOURCE_CODE_LOCATION;

// The events of one location. Peers and roots are ranks within `comm` (OTF2's convention);
// communicators, regions and call sites are ids of the global definitions.
class location_writer {
public:
  location_writer(OTF2_EvtWriter* writer, OTF2_AttributeList* attributes)
      : w_(writer), attributes_(attributes) {}

  OTF2_ErrorCode enter(uint64_t t, uint32_t region, uint32_t site = no_call_site) {
    if (site != no_call_site)
      OTF2_AttributeList_AddSourceCodeLocationRef(attributes_, call_site_attribute, site);
    return counted(OTF2_EvtWriter_Enter(w_, attributes_, t, region));
  }
  // A run of `polls` calls of one polling routine that completed nothing (the run's first
  // enter; its Leave is the last call's): the Enter carries the count and the time inside them.
  OTF2_ErrorCode enter_polls(uint64_t t, uint32_t region, uint32_t site, uint64_t polls,
                             uint64_t inside_ns) {
    OTF2_AttributeValue v;
    v.uint64 = polls;
    OTF2_AttributeList_AddAttribute(attributes_, polls_attribute, OTF2_TYPE_UINT64, v);
    v.uint64 = inside_ns;
    OTF2_AttributeList_AddAttribute(attributes_, poll_time_attribute, OTF2_TYPE_UINT64, v);
    return enter(t, region, site);
  }
  OTF2_ErrorCode leave(uint64_t t, uint32_t region) {
    return counted(OTF2_EvtWriter_Leave(w_, nullptr, t, region));
  }
  OTF2_ErrorCode send(uint64_t t, uint32_t peer, uint32_t comm, uint32_t tag, uint64_t bytes) {
    return counted(OTF2_EvtWriter_MpiSend(w_, nullptr, t, peer, comm, tag, bytes));
  }
  // `partitioned`: the start of a partitioned request (MPI_Psend_init), one message of every
  // partition, marked by the `strata:partitioned` attribute.
  OTF2_ErrorCode isend(uint64_t t, uint32_t peer, uint32_t comm, uint32_t tag, uint64_t bytes,
                       uint64_t request, bool partitioned = false) {
    return counted(OTF2_EvtWriter_MpiIsend(w_, partitioned_mark(partitioned), t, peer, comm, tag,
                                           bytes, request));
  }
  OTF2_ErrorCode isend_complete(uint64_t t, uint64_t request) {
    return counted(OTF2_EvtWriter_MpiIsendComplete(w_, nullptr, t, request));
  }
  OTF2_ErrorCode irecv_request(uint64_t t, uint64_t request, bool partitioned = false) {
    return counted(OTF2_EvtWriter_MpiIrecvRequest(w_, partitioned_mark(partitioned), t, request));
  }
  OTF2_ErrorCode recv(uint64_t t, uint32_t source, uint32_t comm, uint32_t tag, uint64_t bytes) {
    return counted(OTF2_EvtWriter_MpiRecv(w_, nullptr, t, source, comm, tag, bytes));
  }
  OTF2_ErrorCode irecv(uint64_t t, uint32_t source, uint32_t comm, uint32_t tag, uint64_t bytes,
                       uint64_t request) {
    return counted(OTF2_EvtWriter_MpiIrecv(w_, nullptr, t, source, comm, tag, bytes, request));
  }
  // The Wait/Test call that completed `request` found it cancelled.
  OTF2_ErrorCode request_cancelled(uint64_t t, uint64_t request) {
    return counted(OTF2_EvtWriter_MpiRequestCancelled(w_, nullptr, t, request));
  }
  // An unsuccessful test of a request (Score-P writes one per MPI_Test that completed nothing).
  OTF2_ErrorCode request_test(uint64_t t, uint64_t request) {
    return counted(OTF2_EvtWriter_MpiRequestTest(w_, nullptr, t, request));
  }
  OTF2_ErrorCode collective_begin(uint64_t t) {
    return counted(OTF2_EvtWriter_MpiCollectiveBegin(w_, nullptr, t));
  }
  // `root` OTF2_UNDEFINED_UINT32 when the collective has none.
  OTF2_ErrorCode collective_end(uint64_t t, OTF2_CollectiveOp op, uint32_t comm, uint32_t root,
                                uint64_t sent, uint64_t received) {
    return counted(OTF2_EvtWriter_MpiCollectiveEnd(w_, nullptr, t, op, comm, root, sent, received));
  }

  // Events written so far: what the location's definition declares.
  uint64_t events() const { return events_; }
  // One-sided operations on the archive's one window (archive_definitions::one_sided_comm),
  // `target` a world rank; their completion, at the window's synchronization, is not written.
  OTF2_ErrorCode rma_put(uint64_t t, uint32_t target, uint64_t bytes) {
    return counted(
        OTF2_EvtWriter_RmaPut(w_, nullptr, t, one_sided_window, target, bytes, next_rma_++));
  }
  OTF2_ErrorCode rma_get(uint64_t t, uint32_t target, uint64_t bytes) {
    return counted(
        OTF2_EvtWriter_RmaGet(w_, nullptr, t, one_sided_window, target, bytes, next_rma_++));
  }
  OTF2_ErrorCode rma_atomic(uint64_t t, uint32_t target, OTF2_RmaAtomicType type, uint64_t sent,
                            uint64_t received) {
    return counted(OTF2_EvtWriter_RmaAtomic(w_, nullptr, t, one_sided_window, target, type, sent,
                                            received, next_rma_++));
  }
  static constexpr OTF2_RmaWinRef one_sided_window = 0;

  OTF2_EvtWriter* handle() const { return w_; }

  // The attribute ids of `strata:call_site`, `strata:polls`, `strata:poll_time_ns` and
  // `strata:partitioned` in the global definitions.
  static constexpr OTF2_AttributeRef call_site_attribute = 0;
  static constexpr OTF2_AttributeRef polls_attribute = 1;
  static constexpr OTF2_AttributeRef poll_time_attribute = 2;
  static constexpr OTF2_AttributeRef partitioned_attribute = 3;

private:
  // The attribute list marking a partitioned request's message, or none.
  OTF2_AttributeList* partitioned_mark(bool partitioned) {
    if (!partitioned)
      return nullptr;
    OTF2_AttributeValue v;
    v.uint8 = 1;
    OTF2_AttributeList_AddAttribute(attributes_, partitioned_attribute, OTF2_TYPE_UINT8, v);
    return attributes_;
  }
  OTF2_ErrorCode counted(OTF2_ErrorCode rc) {
    ++events_;
    return rc;
  }
  OTF2_EvtWriter* w_;
  OTF2_AttributeList* attributes_;
  uint64_t next_rma_ = 0; // the matching id of the next one-sided operation
  uint64_t events_ = 0;
};

// One measurement of a location's clock against the job's (rank 0's): at local `time`, `offset`
// ticks to add, within `stddev`.
struct clock_offset {
  uint64_t time = 0;
  int64_t offset = 0;
  double stddev = 0;
};

// What the global definitions say about the job. Times are in nanoseconds.
struct archive_definitions {
  uint64_t first_time = 0;  // the clock's global offset: the first event of the job
  uint64_t length = 0;      // ticks from the first event past the last
  uint64_t realtime_ns = 0; // wall-clock time (since the epoch) of first_time
  std::vector<std::string> hosts;
  struct rank {
    uint32_t host = 0; // index into hosts
    uint64_t events = 0;
    uint64_t dropped = 0; // records lost at the size limit ...
    // ... after this time (the stop policy) or before it (ring), on the job's clock; 0: none.
    uint64_t dropped_after = 0;
    uint64_t dropped_before = 0;
    // Calls counted rather than recorded (routine, calls), by routine name.
    std::vector<std::pair<std::string, uint64_t>> counted_calls;
    int64_t offset_init_ns = 0;
    int64_t offset_final_ns = 0;
  };
  std::vector<rank> ranks; // location r is rank r
  struct region {
    std::string name;
    OTF2_RegionRole role = OTF2_REGION_ROLE_FUNCTION;
    OTF2_Paradigm paradigm = OTF2_PARADIGM_USER; // OTF2_PARADIGM_MPI for MPI routines
  };
  std::vector<region> regions; // by region id
  struct source_location {
    std::string file;
    uint32_t line = 0;
  };
  std::vector<source_location> sites; // by call-site id
  struct communicator {
    std::string name;
    std::vector<uint64_t> world_ranks; // local rank i is world_ranks[i]
  };
  std::vector<communicator> comms; // by communicator id
  // The communicator of every world rank that the archive's one RMA window (its one-sided
  // operations' window, whatever window the program used: targets are world ranks) is defined
  // on; -1: no window (the job made no one-sided operation).
  int64_t one_sided_comm = -1;
};

class archive_writer {
public:
  // Creates DIR/traces.otf2 and its files (OTF2 refuses to write over an archive: see
  // prepare_archive_directory). ok() tells whether it could.
  explicit archive_writer(const std::string& dir);
  ~archive_writer(); // closes the archive if close() was not called
  archive_writer(const archive_writer&) = delete;
  archive_writer& operator=(const archive_writer&) = delete;

  [[nodiscard]] bool ok() const { return archive_ != nullptr; }
  // OTF2's description of the first failure (what it would have printed: OTF2 prints nothing
  // while a writer is open), empty while there was none.
  [[nodiscard]] const std::string& error() const { return error_; }
  // For OTF2_MPI_Archive_SetCollectiveCallbacks, which only an MPI program can call.
  [[nodiscard]] OTF2_Archive* handle() const { return archive_; }

  // One process writes every location.
  OTF2_ErrorCode use_serial_collectives();

  OTF2_ErrorCode open_event_files();
  // The writer of one location's events; valid until close_event_files().
  location_writer& location(uint64_t id);
  // Closes every location's writer, then the event files.
  OTF2_ErrorCode close_event_files();

  // Each location's local definitions: its clock offsets (none: an empty file, as readers such as
  // otf2-print expect one per location).
  struct local_definitions {
    uint64_t location = 0;
    std::vector<clock_offset> clock;
  };
  OTF2_ErrorCode write_local_definitions(const std::vector<local_definitions>& locations);

  // The global definitions (one process of the job writes them).
  OTF2_ErrorCode write_global_definitions(const archive_definitions& defs);

  OTF2_ErrorCode close();

private:
  OTF2_ErrorCode check(OTF2_ErrorCode rc, const char* what);
  static OTF2_ErrorCode keep_error(void* self, const char* file, uint64_t line,
                                   const char* function, OTF2_ErrorCode code, const char* format,
                                   va_list args);
  struct open_location;
  OTF2_ErrorCallback previous_callback_ = nullptr;
  OTF2_Archive* archive_ = nullptr;
  std::vector<std::unique_ptr<open_location>> locations_;
  std::string error_;
};

// Creates DIR, or empties an earlier archive out of it (only the files OTF2 writes under the name
// `traces`). Returns why it cannot be used, empty when it can.
std::string prepare_archive_directory(const std::string& dir);

} // namespace strata::trace
