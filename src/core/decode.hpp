// Argument decoding for event modules: computed once per call for the whole chain segment.
#pragma once

#include <mpi.h>
#include <strata/module.h>

#include <atomic>
#include <cstdint>
#include <cstring>

namespace strata::decode {

// What the core learned about a communicator the first time it saw it.
struct comm_info {
  uint32_t id = 0;
  int size = 0;
  int rank = 0;
  bool inter = false;
  // strata_comm_bin(size), for the summed collectives' communicator-size histogram.
  uint8_t comm_bin = 0;
  const int* world_ranks = nullptr; // peer rank -> world rank; nullptr = identity (world)
  // Its topology's neighbours of this rank, received from << 32 | sent to; -1 until the first
  // neighbourhood collective on it asks (neighbor_degree): other calls never pay for them.
  mutable int64_t neighbor_degrees = -1;
  // For the core's sums per peer (dispatch.hpp, add_to_peer): each rank's world rank, never
  // null (the application's world has a table of its own), where every rank of the group is a
  // rank of the world; `pair_ranks` is then `size`, else 0 (a spawned process's communicator,
  // a window of no look-up: those go the long way, add_to_peer_outside_world). One unsigned
  // compare then both leaves out the special ranks and bounds the world rank, with no test of
  // the table and none of the world rank.
  const int* pair_world = nullptr;
  uint32_t pair_ranks = 0;
};

struct completion_space;

// Per-call space that outlives the enter decoder: a status to hand MPI when the application
// passed MPI_STATUS_IGNORE, so bytes received can still be read; what a completion noted of its
// requests before the call (completions.hpp: written there before it is read, so not here on
// every call).
struct scratch {
  MPI_Status status;
  const comm_info* comm = nullptr;
  bool receive;            // MPI_Wait, MPI_Test: the request is a receive's
  int receives;            // the other completions: how many are (-1: unknown)
  completion_space* space; // ... and which, when any is
};

// The few real MPI functions the decoder uses, resolved once (never through our entries).
struct mpi_api {
  int (*type_size)(MPI_Datatype, int*);
  int (*type_size_x)(MPI_Datatype, MPI_Count*);
  int (*get_count)(const MPI_Status*, MPI_Datatype, int*);
  int (*get_elements_x)(const MPI_Status*, MPI_Datatype, MPI_Count*);
  int (*test_cancelled)(const MPI_Status*, int*);
};
extern mpi_api api __attribute__((visibility("hidden")));
void resolve_api();

// The application's world changed (strata_host::replace_world): world ranks are asked again.
void forget_world_ranks();
// How many world ranks there are (the group that world ranks are ranks of), 0 when MPI cannot
// say: the least a module's sums per world rank must cover (comm_info::pair_world).
int world_rank_count();

// The field groups that the usual stacks read of few calls (the profile reads none of them:
// module.h, strata_module_function_fields_v1): a segment that reads none of them passes every
// one with one test (start_event, the generated decoders) instead of a test each.
inline constexpr uint32_t rare_fields =
    STRATA_FIELD_PEER | STRATA_FIELD_TAG | STRATA_FIELD_REQUESTS | STRATA_FIELD_STATUS;

template <typename H> inline uint64_t handle_bits(H h) {
  uint64_t bits = 0;
  // H is a pointer (Open MPI) or an integer (MPICH): its bits, either way.
  static_assert(sizeof(H) <= sizeof(bits)); // NOLINT(bugprone-sizeof-expression)
  std::memcpy(&bits, &h, sizeof(H));        // NOLINT(bugprone-sizeof-expression)
  return bits;
}

// A slot of the core's tables of communicators and of windows (decode.cpp): the handle's bits
// as its key, published last (release), so that a reader that sees the key sees the whole
// entry; the attribute delete callback tombstones the key when MPI frees the handle (MPI reuses
// handle values). Two values are never a key of a handle's own bits (decode.cpp: empty and
// tombstone; a handle with those bits is keyed apart, so it is only ever found the long way).
struct comm_slot {
  std::atomic<uint64_t> key{0}; // 0: empty
  comm_info info;
};

// The slot of the communicator this thread looked up last, its key checked against the
// handle: a program's calls mostly name one communicator after another, and a hit costs one
// load and a compare (the handle's own bits are the key) instead of a probe. A thread starts
// at a slot whose key is a tombstone, which no handle's bits equal.
extern __thread const comm_slot* last_comm __attribute__((tls_model("initial-exec")));

// Whether the slot holds `handle` now.
template <typename H> inline bool holds(const comm_slot& slot, H handle) {
  return slot.key.load(std::memory_order_acquire) == handle_bits(handle);
}

const comm_info* lookup_comm_in_table(MPI_Comm comm);
// The cache's entry, or nullptr when it has none; never calls MPI (any thread may ask).
const comm_info* find_comm_without_mpi(MPI_Comm comm);

inline const comm_info* lookup_comm(MPI_Comm comm) {
  if (const comm_slot& last = *last_comm; __builtin_expect(holds(last, comm), 1))
    return &last.info;
  return lookup_comm_in_table(comm);
}

// Windows as communicators: a one-sided operation's target is a rank of its window's group,
// which the core learns the first time a call names the window (its group's size, this
// process's rank and the rank -> world rank table, in a comm_info; MPI_Win_free forgets it,
// as MPI reuses handles). The last window this thread named is kept as the last communicator is.
extern __thread const comm_slot* last_window __attribute__((tls_model("initial-exec")));
const comm_info* lookup_window_in_table(MPI_Win win);

inline const comm_info* lookup_window(MPI_Win win) {
  if (const comm_slot& last = *last_window; holds(last, win))
    return &last.info;
  return lookup_window_in_table(win);
}

// A group of no ranks: what the sums per peer take for a communicator or window that no look-up
// found, so that their path tests the rank alone (its size, 0, leaves every rank out).
extern const comm_info no_group __attribute__((visibility("hidden")));
inline const comm_info& group_or_none(const comm_info* c) {
  return c != nullptr ? *c : no_group;
}

// A call's peer for the core's sums per peer (dispatch.hpp, count_timed_body): its rank in its
// communicator's (or window's) group, and that group as looked up, never null.
struct rank_in_group {
  const comm_info& group;
  int rank;
};
// The requests an MPI_Start or MPI_Startall started, for the sums of their messages.
struct started_requests {
  const MPI_Request* requests;
  int count;
};
inline const comm_info& peer_comm_group(MPI_Comm comm) {
  if (const comm_slot& last = *last_comm; __builtin_expect(holds(last, comm), 1))
    return last.info;
  return group_or_none(lookup_comm_in_table(comm));
}
inline const comm_info& peer_window_group(MPI_Win win) {
  if (const comm_slot& last = *last_window; __builtin_expect(holds(last, win), 1))
    return last.info;
  return group_or_none(lookup_window_in_table(win));
}

// A rank of the communicator first, with one unsigned compare: the special ranks are negative.
inline int world_rank(const comm_info* c, int rank) {
  if (__builtin_expect(c != nullptr && static_cast<unsigned>(rank) < static_cast<unsigned>(c->size),
                       1))
    return c->world_ranks != nullptr ? c->world_ranks[rank] : rank;
  if (rank == MPI_ANY_SOURCE)
    return STRATA_ANY_SOURCE_RANK;
  if (rank == MPI_PROC_NULL)
    return STRATA_PROC_NULL_RANK;
  return STRATA_NO_RANK; // bad argument: MPI will report it, we only must not crash
}

// The predefined datatypes' sizes, asked of MPI once when the tools start and read-only after:
// a message's bytes without a call into MPI per call. Only predefined types: they are never
// freed, so their handles never come to name another type, where a derived type's handle may
// be reused after MPI_Type_free (those are asked every time). Open addressing keyed by the
// handle's bits; a key is published after its size (release), as in the communicator cache.
struct predefined_type_slot {
  std::atomic<uint64_t> handle{0}; // 0: empty
  int64_t size = 0;
};
inline constexpr size_t predefined_type_slots = 256; // a power of two, well above the types
extern predefined_type_slot predefined_types[predefined_type_slots]
    __attribute__((visibility("hidden")));
void learn_predefined_type_sizes();

inline size_t predefined_type_slot_of(uint64_t bits) {
  return static_cast<size_t>((bits * 0x9E3779B97F4A7C15ull) >> 56);
}
static_assert(predefined_type_slots == size_t{1} << 8, "predefined_type_slot_of's shift");

#if defined(MPICH)
// MPICH (and the MPIs built on it) writes a predefined type's size into its handle: the kind
// "built in" in the top six bits (0x4c000000), the size in bytes in bits 8-15 (mpi.h: MPI_INT
// is 0x4c000405). Read from there, a shift where the table's probe took about ten
// instructions. learn_predefined_type_sizes checks it against MPI's own answer for every
// predefined type when the tools start and turns it off on any difference (a kind no handle has).
inline constexpr uint64_t builtin_type_kind_mask = 0xfc000000u;
extern std::atomic<uint64_t> builtin_type_kind __attribute__((visibility("hidden")));
inline int64_t builtin_type_size(uint64_t bits) {
  return static_cast<int64_t>((bits >> 8) & 0xffu);
}
#endif

// The size of one element of `type` in bytes, or -1 when MPI does not say.
inline int64_t type_size(MPI_Datatype type) {
  const uint64_t bits = handle_bits(type);
#if defined(MPICH)
  if ((bits & builtin_type_kind_mask) == builtin_type_kind.load(std::memory_order_relaxed))
    return builtin_type_size(bits);
#endif
  // Never full (learn_predefined_type_sizes fills under half), so an empty slot ends the probe.
  for (size_t i = predefined_type_slot_of(bits);; i = (i + 1) & (predefined_type_slots - 1)) {
    const uint64_t key = predefined_types[i].handle.load(std::memory_order_acquire);
    if (key == 0)
      break;
    if (key == bits)
      return predefined_types[i].size;
  }
  MPI_Count size = 0;
  if (api.type_size_x(type, &size) != MPI_SUCCESS || size < 0)
    return -1;
  return static_cast<int64_t>(size);
}

inline int64_t type_bytes(int64_t count, MPI_Datatype type) {
  if (count <= 0 || type == MPI_DATATYPE_NULL)
    return 0;
  const int64_t size = type_size(type);
  return size < 0 ? 0 : count * size;
}

template <typename C> inline int64_t summed_count(const C* counts, int n) {
  int64_t total = 0;
  for (int i = 0; counts != nullptr && i < n; ++i)
    total += static_cast<int64_t>(counts[i]);
  return total;
}

template <typename C> inline int64_t summed_bytes(const C* counts, MPI_Datatype type, int n) {
  return type_bytes(summed_count(counts, n), type);
}

// The bytes of counts[i] elements of types[i], over n peers (MPI_Alltoallw).
template <typename C>
inline int64_t summed_typed_bytes(const C* counts, const MPI_Datatype* types, int n) {
  int64_t total = 0;
  for (int i = 0; counts != nullptr && types != nullptr && i < n; ++i)
    total += type_bytes(static_cast<int64_t>(counts[i]), types[i]);
  return total;
}

// The neighbours of this rank that a neighbourhood collective on `comm` sends to (`out`) or
// receives from, as its topology says: asked of MPI once per communicator, then cached.
int64_t learn_neighbor_degrees(MPI_Comm comm, const comm_info* c);
inline int neighbor_degree(MPI_Comm comm, bool out) {
  const comm_info* c = lookup_comm(comm);
  if (c == nullptr)
    return 0;
  int64_t degrees = std::atomic_ref<int64_t>(c->neighbor_degrees).load(std::memory_order_relaxed);
  if (__builtin_expect(degrees < 0, 0))
    degrees = learn_neighbor_degrees(comm, c);
  return static_cast<int>(out ? degrees & 0xffffffff : degrees >> 32);
}

// The communicator's record into `s.comm`, never null once this ran (no_group when none was
// found: the summed collective reads it after the call with no test), and into the event.
inline void set_comm_info(strata_event& ev, scratch& s, MPI_Comm comm) {
  const comm_info* c = lookup_comm(comm);
  s.comm = c;
  if (__builtin_expect(c == nullptr, 0)) { // no communicator: what start_event would have set
    s.comm = &no_group;
    ev.comm_id = 0;
    ev.comm_size = 0;
    ev.comm_world_ranks = nullptr;
    ev.comm_rank = -1;
    return;
  }
  ev.comm_id = c->id;
  ev.comm_size = c->size;
  ev.comm_world_ranks = c->world_ranks;
  ev.comm_rank = c->rank;
  if (c->inter)
    ev.flags |= STRATA_EVENT_INTERCOMM;
}

// A one-sided operation's window, for its target's world rank (set_peer); the event's
// communicator fields are left alone: a window's group is no communicator of the trace's.
inline void set_window(scratch& s, MPI_Win win) {
  s.comm = lookup_window(win);
}
inline void set_peer(strata_event& ev, const scratch& s, int rank) {
  ev.peer = world_rank(s.comm, rank);
}
inline void set_root(strata_event& ev, const scratch& s, int root) {
  ev.root = world_rank(s.comm, root);
  // A communicator not found (no_group, of no ranks) has no root.
  ev.is_root = (s.comm != nullptr && s.comm->size > 0 && !s.comm->inter && root == s.comm->rank) ||
               root == MPI_ROOT;
}
template <typename R> inline void set_request(strata_event& ev, R* request) {
  if (request != nullptr)
    ev.request = handle_bits(*request);
}
template <typename N, typename R> inline void set_requests(strata_event& ev, N count, R* array) {
  ev.request_count = static_cast<int>(count);
  ev.requests = array;
}
// A status of the core's where the application ignores it; true when substituted.
inline bool substitute_ignored(scratch& s, MPI_Status*& status) {
  if (status != MPI_STATUS_IGNORE)
    return false;
  status = &s.status;
  return true;
}
// The bytes a status says were received, read from the status itself instead of a call into
// MPI per completed receive (MPI_Get_elements_x, about 90 instructions): MPICH (and its
// derivatives) keeps them in count_lo and the bits above the cancelled flag of
// count_hi_and_cancelled, Open MPI in _ucount (its completion stores the field whole, so the read
// takes it from that store). A 0-byte self MPI_Sendrecv under the profile, ns over native: MPICH
// 28-29 -> 24-25, Open MPI 25-26 -> 20-22. Any other MPI is asked. -1: unknown.
inline int64_t status_bytes(const MPI_Status* status) {
#if defined(MPICH)
  return static_cast<int64_t>(static_cast<unsigned>(status->count_lo)) +
         static_cast<int64_t>(
             static_cast<uint64_t>(static_cast<unsigned>(status->count_hi_and_cancelled) >> 1)
             << (8 * sizeof(int)));
#elif defined(OPEN_MPI)
  return static_cast<int64_t>(status->_ucount);
#else
  MPI_Count bytes = 0;
  if (api.get_elements_x(status, MPI_BYTE, &bytes) != MPI_SUCCESS || bytes == MPI_UNDEFINED)
    return -1;
  return static_cast<int64_t>(bytes);
#endif
}

// The bytes received (STRATA_FIELD_RECEIVED), and the rest only for the groups that read it.
inline void read_status(strata_event& ev, const scratch& s, uint32_t fields,
                        const MPI_Status* status) {
  if (ev.result != MPI_SUCCESS || status == nullptr || status == MPI_STATUS_IGNORE)
    return;
  ev.bytes_received = status_bytes(status);
  if ((fields & STRATA_FIELD_STATUS) == 0)
    return;
  ev.source = world_rank(s.comm, status->MPI_SOURCE);
  ev.status_source = status->MPI_SOURCE;
  ev.status_tag = status->MPI_TAG;
  if ((fields & STRATA_FIELD_TAG) != 0 && (ev.tag == STRATA_NO_TAG || ev.tag == MPI_ANY_TAG))
    ev.tag = status->MPI_TAG;
}

} // namespace strata::decode
