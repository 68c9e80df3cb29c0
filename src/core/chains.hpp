// The call path's state: the chains built once in MPI_Init and read-only afterwards, each
// thread's place in the stack, the marks that send the application's calls the long way, and
// what the life cycle and the real functions' lookup offer the entry points. How a call walks
// a chain is dispatch.hpp.
#pragma once

#include "strata_functions.hpp"
#include <mpi.h>
#include <strata/module.h>
#include <strata/where.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#define STRATA_EXPORT __attribute__((visibility("default")))
#define STRATA_HIDDEN __attribute__((visibility("hidden")))

namespace strata::core {

// What decoding `fields` of a function needs besides: world ranks and communicator sizes come
// from the communicator's lookup, the bytes of a rooted call from whether this rank is the root
// (`bytes_prerequisites`: gen::bytes_prerequisites, or a decoder's own constant), and a wildcard
// tag from the status; the status's fields include the bytes received.
constexpr uint32_t fields_with_prerequisites(uint32_t fields, uint32_t bytes_prerequisites) {
  if ((fields & STRATA_FIELD_BYTES) != 0)
    fields |= bytes_prerequisites;
  if ((fields & STRATA_FIELD_TAG) != 0)
    fields |= STRATA_FIELD_STATUS;
  if ((fields & STRATA_FIELD_STATUS) != 0)
    fields |= STRATA_FIELD_RECEIVED;
  if ((fields & (STRATA_FIELD_PEER | STRATA_FIELD_STATUS)) != 0)
    fields |= STRATA_FIELD_COMM;
  return fields;
}

// One layer's part in one function's chain: either a wrapper module's MPI_X or an event module's
// callbacks. Adjacent event entries form a group that shares one decoded event and one clock pair.
struct chain_entry {
  void* wrapper = nullptr; // the module's own MPI_X, called with the original arguments
  strata_event_fn enter = nullptr;
  strata_event_fn exit = nullptr;
  void* state = nullptr;
  int layer = 0;       // the module's position in the stack
  int calls_layer = 0; // where its callbacks' own MPI calls start (core_internal.hpp)
  int group_end = 0;   // event entries: index of the first entry after this group
  // First entry of an event group whose modules all accept sampled polls: time one poll in
  // about this many (0: every one); the others go to each entry's untimed_poll.
  uint32_t poll_interval = 0;
  strata_event_fn untimed_poll = nullptr;
  // Counting without events (module.h, strata_module_counter_v1), set at the end of MPI_Init.
  // On the first entry of a group, what the group does instead of events (every entry of the
  // group then has a counter): count every call, or count the untimed polls that complete
  // nothing. Each entry's counter is its module's, for this function.
  uint8_t count_mode = 0;
  bool atomic_counts = false; // MPI_THREAD_MULTIPLE: relaxed atomic adds
  // The usual case, taken with the fewest instructions: one module in the group, plain adds,
  // and nothing below it but the real function.
  bool count_direct = false;
  int index = 0; // this entry's position in its chain (chain::first_below finds it by address)
  uint64_t* counter = nullptr;
  // Event entries, for the rest of their group from them on (a call may enter a group in its
  // middle, loading.cpp): the strata_event fields its modules read (module.h,
  // strata_module_fields_v1), with what decoding them needs (the others are not decoded), and
  // whether some module of it has an enter callback.
  uint32_t fields = STRATA_FIELD_ALL;
  bool any_enter = true;
  // An event group of this entry alone, with an exit callback and no enter callback, and
  // nothing below it but the real function (the profile alone): invoke_sole_exit, the
  // shortest event path.
  bool sole_exit = false;
  // sole_exit, and every call of it timed (no counting, no sampled polls): the entry point
  // jumps to invoke_sole_exit after one test, polls included.
  bool sole_exit_every_call = false;
  // The entry's summed calls are the usual ones (count_timed: the TSC, the profile's fields and
  // histograms), found so by the first that took the general path, which also puts the
  // application's first entry in strata_usual_entries (below).
  mutable bool summed_usual = false;
  // sole_exit_every_call, and the module lent the core its slot for this function (module.h,
  // strata_module_timed_counts_v1): each call summed into it here, no event, no callback
  // (count_timed_call below). Set at the end of MPI_Init.
  strata_timed_slot* timed_slot = nullptr;
  uint64_t* latest_exit = nullptr;
  mutable uint64_t latest_exit_due = 0; // the clock's raw reading after which it moves on
  uint32_t timed_histograms = 0;
  // With timed_slot, for a function that sends: the module's sums per destination world rank
  // (strata_timed_counts::pairs), else null.
  strata_pair_sum* timed_pairs = nullptr;
  uint32_t timed_pair_count = 0;
  // What a call summed into timed_slot decodes: `fields` without the peer, which only the sums
  // per peer read there, and they read it from the arguments.
  uint32_t timed_fields = STRATA_FIELD_ALL;
  // With timed_slot, for a collective: the module's sums per communicator, indexed by the
  // event's comm_id (strata_timed_counts::comms), else null.
  strata_comm_sum* timed_comms = nullptr;
  uint32_t timed_comm_count = 0;
  // With timed_slot, for MPI_Start and MPI_Startall: the module's table of persistent requests
  // that the core adds each start to (strata_timed_counts::started, peer_sums.hpp), else null;
  // without it, the module's function that counts what the started requests send
  // (strata_timed_counts::after_start), called with `state`, else null.
  const strata_started_slot* timed_started = nullptr;
  strata_event_fn timed_after_start = nullptr;
};

enum : uint8_t {
  count_none = 0,
  count_calls = 1,
  count_empty_polls = 2,
  count_untimed_polls = 3 // every untimed poll only counted, nothing read after the call
};

struct chain {
  int size = 0;
  const chain_entry* entries = nullptr;
  // first_below[layer + 1]: the first entry below `layer` (layer -1 = the application), null
  // when only the real function is left.
  const chain_entry* const* first_below = nullptr;
  // The whole chain is one counting module with a plain counter (entries[0].count_direct) and
  // the application's world is its own: the entry point counts without going through
  // wrapped_X (counts_here() and counted<>() below). Set at the end of MPI_Init, with
  // entries[0].count_mode.
  uint64_t* direct_counter = nullptr;
  // The same for a poll whose module counts every untimed poll (count_untimed_polls): the
  // entry point itself counts it and jumps into MPI (lean_poll() below).
  uint64_t* untimed_poll_counter = nullptr;
};

// Per-thread position in the stack. POD with __thread (no C++ TLS wrapper call) and the
// initial-exec model: one %fs-relative load on the wrapped path.
struct thread_state {
  int layer; // -1 outside modules: the application's calls start at the top
  // >0 while the real MPI runs: its own calls to exported MPI_/PMPI_ pass through. A thread
  // starts at thread_unlisted (below), counted on from there.
  int in_real;
  const void* call_site;
  uint32_t polls_until_timed; // sampled polls: polls up to and including the next timed one
  uint32_t poll_random;       // xorshift state for the gaps between timed polls
  // Noted by a Fortran binding's entry point (fortran_entries.cpp) for the C call the binding
  // makes next: the program's return address, and the routine (-1: none noted).
  const void* fortran_site;
  int fortran_fid;
  // The chain entry of the timed call about to start, handed to strata_timed_X by whoever jumps
  // there (the assembly entry point, enter_sole_exit) with the arguments untouched: written
  // just before the jump, read at its start (sole_exit_in_place).
  const chain_entry* timed_entry;
  // Where the thread is, for the hang diagnosis (strata/where.h): written on the timed calls.
  strata_where where;
  // The requests it made, for the same (completions.hpp): its own table from its first call
  // (listed, or beyond the list one nobody reads), before that discarded_posts.
  strata_where_posts* posts;
};
extern __thread thread_state tls __attribute__((tls_model("initial-exec")));

// The layer and in_real as one 8-byte word (layer in the low half), which the assembly entry
// points read with one load: a change to in_real on the call path is written as that word too
// (call_real, dispatch.hpp), so that the next call's load is forwarded from the store.
inline constexpr int64_t in_real_one = int64_t{1} << 32;
__attribute__((always_inline)) inline void add_to_layer_word(thread_state& ts, int64_t amount) {
  static_assert(offsetof(thread_state, layer) == 0 && offsetof(thread_state, in_real) == 4);
  int64_t word;
  std::memcpy(&word, &ts, sizeof word);
  word += amount;
  std::memcpy(&ts, &word, sizeof word);
}

extern const chain* chains[gen::function_count] STRATA_HIDDEN;

// Per function, the application's first entry once its summed calls were found usual
// (chain_entry::summed_usual), else null: the assembly entry point tests it first and jumps
// straight to the copy compiled for them (strata_usual_X), which reads the entry from here and
// tests nothing. Set once, never cleared (the chains and the slots live until the process ends).
extern "C" STRATA_HIDDEN const chain_entry* strata_usual_entries[gen::function_count];

// The table of requests of a thread before its first call (where.cpp), when it has no timed
// call yet, and should no table of its own be had: never read, so that noting a request tests
// nothing.
extern strata_where_posts discarded_posts STRATA_HIDDEN;

// A thread starts with in_real at this value (the TLS image gives it to every thread, however
// and whenever made, the main one included): its record is not listed in strata_where_threads
// yet. Every way an application's call reaches a chain tests in_real against 0 already (the
// entry points' one compare of layer and in_real, dispatch<>()), so the thread's first such call
// goes out of line (first_call_of_thread in dispatch.hpp), where it is listed: the timed calls
// test nothing for it (a test of the record's counter on each cost 2 instructions a barrier on
// Open MPI, 5 on MPICH). MPI's nesting counts on from it, so that MPI's own calls of the exported
// functions still pass through; in_real is never an index, so nothing else needs to know.
inline constexpr int thread_unlisted = 1 << 30;
// The real MPI is running on this thread (a call reaching the library is MPI's own).
inline bool in_mpi_library(const thread_state& ts) {
  return (ts.in_real & ~thread_unlisted) != 0;
}
// The calling thread's record joins strata_where_threads (where.cpp), and its in_real loses
// thread_unlisted.
__attribute__((cold, noinline)) void list_this_thread() STRATA_HIDDEN;

// Why the application's calls take the long way (dispatch_marked<>() below): one byte per
// reason, each set on its own, and all of them tested with one compare on the call path.
// (Byte 0 is free. A Python site is not a reason: start_event takes it, call_site below.)
enum call_mark : unsigned {
  mark_fortran = 1,        // a Fortran binding's entry point has run (fortran_entries.cpp)
  mark_world_replaced = 2, // strata_host::replace_world: see world_replacement below
  mark_count = 4
};
// Written from the Fortran entry points' assembly too (its byte offset is mark_fortran).
extern "C" STRATA_HIDDEN unsigned char strata_call_marks[mark_count];

inline bool any_call_mark() {
  uint32_t word = 0;
  static_assert(sizeof word == sizeof strata_call_marks);
  std::memcpy(&word, strata_call_marks, sizeof word);
  return word != 0;
}

// Set by strata_host::replace_world: the application's MPI_COMM_WORLD is world_replacement,
// and the modules' is modules_world (the tools' world: the application's processes), except in
// calls made at the replacing module's layer (world_replacing_layer). Those are its wrappers'
// calls to the next layer; its callbacks' own calls start from the last layer
// (own_calls_layer, core_internal.hpp), its own only when it is alone or sees its own calls,
// which is why the monitor never names MPI_COMM_WORLD for its own traffic (module.h).
inline bool world_replaced() {
  return strata_call_marks[mark_world_replaced] != 0;
}
extern MPI_Comm world_replacement STRATA_HIDDEN;
extern MPI_Comm modules_world STRATA_HIDDEN;
extern int world_replacing_layer STRATA_HIDDEN;

// The life cycle (lifecycle.cpp): the stack starts after the application's first MPI_Init or
// MPI_Session_init and ends at its last MPI_Finalize or MPI_Session_finalize.
void load_modules_once();
void after_init(int result);
void before_finalize();
void after_finalize(int result);
#if MPI_VERSION >= 4
void after_session_init(int result, MPI_Session* session);
void before_session_finalize(MPI_Session* session);
void after_session_finalize(int result, MPI_Session* session);
// With tool ranks taken out of the application's world: its "mpi://WORLD" group narrowed to
// the application's processes (MPI_Group_from_session_pset's result).
void narrow_world_pset(const char* pset_name, MPI_Group* group);
#endif
void* find_real(const char* name);
// Resolves every real MPI function, once, from whichever thread calls first; safe before the
// library's constructor has run and before MPI_Init.
void resolve_real_once();
// A real function the MPI library does not have: one line, then the process ends.
[[noreturn]] void missing_real(const char* name);
// The return address lies in one of the MPI library's own objects (its Fortran bindings
// included): the call is the library's, not the program's.
bool called_from_mpi_library(const void* return_address);

} // namespace strata::core
