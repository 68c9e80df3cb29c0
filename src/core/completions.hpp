// Bytes received by the calls that complete requests (MPI_Wait, MPI_Test and their -all, -any
// and -some forms). A status says what arrived only for a receive: the status of a completed send
// is undefined (MPI 4.0, 3.7.3), and the MPIs fill it differently (Open MPI with the send's own
// size, MPICH not at all but for the cancelled bit). So the core keeps the kind of the requests
// the application makes, by handle: a call that makes a receive request (MPI_Irecv,
// MPI_Recv_init, MPI_Imrecv) marks its handle, any other call that makes a request unmarks it.
// A handle that MPI reuses thus has the kind of its latest maker, and nothing needs removing when
// a request completes (a poll that the core counts without a look at what it completed removes
// nothing). A completion reads the statuses of the receives it completed and no other,
// substituting statuses of its own where the application ignores them.
#pragma once

#include "core/chains.hpp"
#include "core/decode.hpp"
#include "core/request_kinds.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace strata::decode {

// The request in the thread's table of its latest requests, for the hang diagnosis
// (strata/where.h): plain stores into the next slot, what a reader needs to decode it later (the
// handle and the caller's variable, the routine, three of the arguments the call's entry noted
// in the thread's strata_where, the bytes), then its number. No test: only the timed paths,
// which noted the call, ask for it (where_noted), and a thread always has a table of its own
// from its first call (listed, or one nobody reads beyond the list). Peer (a collective's
// root), Tag and Comm are where those arguments are (generated from the routine table; -1: the
// routine has none, its slot is left as it was).
template <int Function, int Peer, int Tag, int Comm>
__attribute__((always_inline)) inline void note_post(const strata_event& ev, uint64_t bits,
                                                     const void* request, bool receive) {
  core::thread_state& ts = core::tls;
  strata_where_posts& posts = *ts.posts;
  const uint64_t made = posts.made;
  // The slot's offset as one shift and one mask (an index scaled apart took six instructions).
  const uint64_t offset = (made * sizeof(strata_where_post)) % sizeof(posts.posts);
  auto& post = *reinterpret_cast<strata_where_post*>(reinterpret_cast<char*>(posts.posts) + offset);
  post.handle = bits;
  post.request = request;
  post.function = Function;
  if constexpr (Peer >= 0 && Peer < STRATA_WHERE_ARGS)
    post.args[0] = ts.where.args[Peer];
  if constexpr (Tag >= 0 && Tag < STRATA_WHERE_ARGS)
    post.args[1] = ts.where.args[Tag];
  if constexpr (Comm >= 0 && Comm < STRATA_WHERE_ARGS)
    post.args[2] = ts.where.args[Comm];
  post.bytes = receive ? ev.bytes_expected : ev.bytes_sent;
  asm volatile("" ::: "memory"); // the post before its number (x86-64 keeps stores in order)
  ++posts.made;                  // read again after the barrier: one add to memory
}

// A call that makes a request (exit): its kind, by the handle it wrote, and where the call was
// noted (where_noted), the request in the thread's table.
template <int Function, int Peer, int Tag, int Comm, bool WhereNoted, typename R>
inline void note_request_made(const strata_event& ev, const R* request, bool receive) {
  if (ev.result != MPI_SUCCESS || request == nullptr || *request == MPI_REQUEST_NULL)
    return;
  const uint64_t bits = handle_bits(*request);
  if constexpr (WhereNoted)
    note_post<Function, Peer, Tag, Comm>(ev, bits, request, receive);
  STRATA_NOTE_REQUEST_KIND(bits, receive);
}

template <typename R> inline bool is_receive_request(const R& request) {
  return request != MPI_REQUEST_NULL && made_by_receive(handle_bits(request));
}

// The status was cancelled: a cancelled request received nothing.
inline bool status_cancelled(const MPI_Status* status) {
#if defined(MPICH)
  return (status->count_hi_and_cancelled & 1) != 0;
#elif defined(OPEN_MPI)
  return status->_cancelled != 0;
#else
  int cancelled = 0;
  return api.test_cancelled(status, &cancelled) == MPI_SUCCESS && cancelled != 0;
#endif
}

// What a completed receive's status says arrived; 0 when it was cancelled.
inline int64_t received_bytes(const MPI_Status* status) {
  if (status_cancelled(status))
    return 0;
  const int64_t bytes = status_bytes(status);
  return bytes > 0 ? bytes : 0;
}

// One request (MPI_Wait, MPI_Test), before the call: whether it is a receive's, and then a status
// of the core's where the application ignores it. True when the status was substituted.
template <typename R>
inline bool note_completion(scratch& s, const R* request, MPI_Status*& status) {
  s.receive = request != nullptr && is_receive_request(*request);
  if (!s.receive || status != MPI_STATUS_IGNORE)
    return false;
  status = &s.status;
  return true;
}

// After the call (when it completed the request): the bytes a receive's status says arrived, and
// for the modules that read the status its source and tag.
inline void read_completion(strata_event& ev, const scratch& s, uint32_t fields,
                            const MPI_Status* status) {
  if (!s.receive || ev.result != MPI_SUCCESS)
    return;
  read_status(ev, s, fields, status);
  if (status_cancelled(status))
    ev.bytes_received = 0;
}

// Space for the completion of many requests, the calling thread's, grown to the largest count it
// completed (a derived MPI_Waitall may nest in another layer's on the same thread, with the same
// count: then it is the same space, not grown). nullptr when memory is short.
struct completion_space {
  uint8_t* receive = nullptr;     // by index: the request was a receive's
  MPI_Status* statuses = nullptr; // substituted for MPI_STATUSES_IGNORE
  size_t capacity = 0;
};
completion_space* completion_space_for(size_t count);

// Many requests (the -all, -any and -some forms), before the call: which of them are receives'
// (scratch::receives: how many, -1 when unknown). Nothing is kept when none is.
template <typename R> inline void note_completions(scratch& s, int count, const R* requests) {
  s.receives = 0;
  s.space = nullptr;
  int first = 0;
  while (requests != nullptr && first < count && !is_receive_request(requests[first]))
    ++first;
  if (requests == nullptr || first >= count)
    return;
  completion_space* space = completion_space_for(static_cast<size_t>(count));
  if (space == nullptr) {
    s.receives = -1;
    return;
  }
  s.space = space;
  int receives = 0;
  for (int i = 0; i < count; ++i) {
    const bool receive = i >= first && is_receive_request(requests[i]);
    space->receive[i] = receive ? 1 : 0;
    receives += receive ? 1 : 0;
  }
  s.receives = receives;
}

// ... and the statuses of the core's where the application ignores them and a receive is among
// the requests. True when they were substituted.
inline bool substitute_statuses(scratch& s, MPI_Status*& statuses) {
  if (s.receives <= 0 || statuses != MPI_STATUSES_IGNORE)
    return false;
  statuses = s.space->statuses;
  return true;
}
inline bool substitute_status_of_any(scratch& s, MPI_Status*& status) {
  if (s.receives <= 0 || status != MPI_STATUS_IGNORE)
    return false;
  status = &s.status;
  return true;
}

// A status that describes a completed request: the call succeeded, or it reported per request
// and this one's went well.
inline bool completed_well(const strata_event& ev, const MPI_Status* status) {
  return ev.result == MPI_SUCCESS ||
         (ev.result == MPI_ERR_IN_STATUS && status->MPI_ERROR == MPI_SUCCESS);
}

// After MPI_Waitall, or MPI_Testall that completed them: every receive's bytes.
inline void read_all_completions(strata_event& ev, const scratch& s, int count,
                                 const MPI_Status* statuses) {
  if (s.receives <= 0 || statuses == MPI_STATUSES_IGNORE)
    return;
  int64_t total = 0;
  for (int i = 0; i < count; ++i)
    if (s.space->receive[i] != 0 && completed_well(ev, &statuses[i]))
      total += received_bytes(&statuses[i]);
  ev.bytes_received = total;
}

// After MPI_Waitany, or MPI_Testany that completed one: that one's bytes, if a receive's.
inline void read_indexed_completion(strata_event& ev, const scratch& s, int count, int index,
                                    const MPI_Status* status) {
  if (s.receives <= 0 || ev.result != MPI_SUCCESS || index < 0 || index >= count ||
      status == MPI_STATUS_IGNORE)
    return;
  ev.bytes_received = s.space->receive[index] != 0 ? received_bytes(status) : 0;
}

// After MPI_Waitsome, MPI_Testsome: the bytes of the receives among those it completed (the
// statuses are in the order of the indices).
inline void read_some_completions(strata_event& ev, const scratch& s, int count, int outcount,
                                  const int* indices, const MPI_Status* statuses) {
  // The space read at once under the test that says it was noted (receives > 0): read inside the
  // loop, the compiler no longer sees that test guard it (-Wmaybe-uninitialized).
  const uint8_t* receive = s.receives > 0 ? s.space->receive : nullptr;
  if (receive == nullptr || outcount == MPI_UNDEFINED || statuses == MPI_STATUSES_IGNORE ||
      (ev.result != MPI_SUCCESS && ev.result != MPI_ERR_IN_STATUS))
    return;
  int64_t total = 0;
  for (int k = 0; k < outcount; ++k) {
    const int i = indices[k];
    if (i >= 0 && i < count && receive[i] != 0 && completed_well(ev, &statuses[k]))
      total += received_bytes(&statuses[k]);
  }
  ev.bytes_received = total;
}

} // namespace strata::decode
