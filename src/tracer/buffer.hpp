// The trace module's per-rank event buffer: fixed-size records in chunks of 8192, the first ones
// allocated and touched up front (so that page faults stay out of the traced calls), more as the
// trace grows (one allocation per chunk, none per event), bounded by a byte limit. At
// the limit, the `stop` policy drops every later record and the `ring` policy recycles the oldest
// chunk; both count what they dropped. No MPI, no locks: the caller serialises.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::trace {

enum class record_kind : uint8_t {
  mpi_call = 1,      // one MPI call: enter and leave times, its decoded arguments
  region_enter = 2,  // a user region begins (t_enter)
  region_leave = 3,  // a user region ends (t_enter)
  send_complete = 4, // follows the Wait/Test call that completed a send request
  recv_complete = 5, // follows the Wait/Test call that completed a receive request
  poll_run = 6,      // polls of one routine from one call site that completed nothing, in a row
  cancelled = 7,     // follows the Wait/Test call that completed a cancelled request
  started = 8,       // follows the MPI_Start(all) call that started a persistent request: its
                     // message as an Isend or Irecv would have made it (index: the bits below)
};

// A started record's index: a receive's request (else a send's), a partitioned one.
inline constexpr uint32_t started_receive = 1, started_partitioned = 2;

// 72 bytes. Ranks are world ranks except `source` (as in the status, a rank in the communicator).
// A poll run spans the first poll's enter to the last one's leave and counts its polls and the
// time spent inside them where a call keeps its bytes.
struct record {
  uint64_t t_enter;
  uint64_t t_leave;
  uint64_t call_site; // return address into the application, 0 = unknown
  union {
    int64_t bytes_sent;
    uint64_t polls; // poll_run
  };
  union {
    int64_t bytes_received;
    uint64_t poll_ns; // poll_run: time inside the polls
  };
  uint32_t request; // the trace's own request id (Isend/Irecv and their completions), 0 = none
  uint32_t id;      // kind << 24 | MPI function id or user region index
  uint32_t comm;    // the trace's communicator index, 0 = none
  int32_t peer;     // destination (world rank) or STRATA_*_RANK
  int32_t tag;      // the send tag, or the receive tag of a blocking receive
  int32_t source;   // the actual source from the status (rank in the communicator)
  int32_t recv_tag; // the tag from the status
  int32_t root;     // world rank of the root, STRATA_NO_RANK when none

  record_kind kind() const { return static_cast<record_kind>(id >> 24); }
  uint32_t index() const { return id & 0xffffffu; }
  static uint32_t make_id(record_kind k, uint32_t index) {
    return static_cast<uint32_t>(k) << 24 | (index & 0xffffffu);
  }
};
static_assert(sizeof(record) == 72);

enum class limit_policy { stop, ring };

class event_buffer {
public:
  static constexpr size_t chunk_records = 8192;

  // `prefault_bytes` (at most the limit) are allocated and written now.
  event_buffer(uint64_t limit_bytes, limit_policy policy, uint64_t prefault_bytes = 0);
  ~event_buffer();
  event_buffer(const event_buffer&) = delete;
  event_buffer& operator=(const event_buffer&) = delete;

  // Space for one record, or nullptr when the stop policy has reached the limit.
  record* append() {
    if (__builtin_expect(next_ != end_, 1))
      return next_++;
    return next_chunk();
  }

  // The record appended last, while it can still be changed: nullptr at the start of a chunk
  // and once the stop policy has dropped a record (what came after it is unknown).
  record* last() { return next_ != current_ && !stopped_ ? next_ - 1 : nullptr; }

  // The record appended `back` records before the last one (0: the last), on the same terms and
  // only within the current chunk.
  record* recent(size_t back) {
    return static_cast<size_t>(next_ - current_) > back && !stopped_ ? next_ - 1 - back : nullptr;
  }

  uint64_t recorded() const; // records held now
  uint64_t dropped() const { return dropped_; }

  // Every record held, oldest first.
  template <typename F> void for_each(F&& fn) const {
    for (size_t i = 0; i < used_; ++i) {
      const record* c = chunks_[(head_ + i) % used_];
      const size_t n = c == current_ ? static_cast<size_t>(next_ - c) : chunk_records;
      for (size_t k = 0; k < n; ++k)
        fn(c[k]);
      if (c == current_)
        break;
    }
  }

private:
  record* next_chunk();

  size_t max_chunks_;
  limit_policy policy_;
  std::vector<record*> chunks_; // allocated so far; the first used_ hold records
  size_t used_ = 0;             // a ring once all max_chunks_ are used
  size_t head_ = 0;             // the oldest chunk
  record* current_ = nullptr;
  record* next_ = nullptr;
  record* end_ = nullptr;
  uint64_t dropped_ = 0;
  bool stopped_ = false;
};

} // namespace strata::trace
