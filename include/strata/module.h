/* Strata module ABI, version 1 (C).
 *
 * A module is a shared object built against one MPI implementation. It exports
 *     const strata_module* strata_module_v1(void);
 * and may be of two kinds, or both at once:
 *  - event module: subscribes to functions in `load` and receives one decoded strata_event per
 *    call at enter and exit. The core decodes the arguments and reads the clock once per call for
 *    all event modules that are adjacent in the stack.
 *  - wrapper module: defines MPI_X itself and calls ZMPI_X (strata/zmpi.h) for the next layer.
 *    The core finds these definitions with dlsym; a patched binary PMPI tool is one of these.
 *
 * MPI calls that a module makes itself from a callback (mpi_ready, finalize, enter, exit,
 * pcontrol, region callbacks, ...) go straight to the MPI library: no other layer sees a module's
 * own traffic (its reductions, gathers, clock synchronisation), so every layer sees exactly the
 * application's calls. A module that wants its own calls seen by the layers below it (as PnMPI's
 * tools see each other) exports STRATA_MODULE_OWN_CALLS_SEEN_SYMBOL, below. A wrapper's calls of
 * ZMPI_X go to the next layer, as its MPI_X is the application's call passed on; strata_host::
 * set_layer moves the thread elsewhere (STRATA_LAYER_MPI: straight to MPI).
 *
 * The application's processes, for a module's own traffic, are strata_host::world(): a
 * communicator private to tools, in the world model (MPI_Init) and the MPI-4 Sessions model
 * alike. MPI_COMM_WORLD is not available to a module in a program that uses only Sessions.
 */
#ifndef STRATA_MODULE_H
#define STRATA_MODULE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STRATA_MODULE_ABI_VERSION 1

#define STRATA_MODULE_EXPORT __attribute__((visibility("default")))

/* The MPI implementation this translation unit is compiled against; the core refuses a module
 * whose flavor differs from its own (the two ABIs are incompatible). */
#if defined(OPEN_MPI)
#define STRATA_MPI_FLAVOR "openmpi"
#elif defined(MPICH_VERSION)
#define STRATA_MPI_FLAVOR "mpich"
#else
#define STRATA_MPI_FLAVOR "none"
#endif

enum {
  STRATA_NO_RANK = -1,         /* the call has no peer or root */
  STRATA_ANY_SOURCE_RANK = -2, /* MPI_ANY_SOURCE */
  STRATA_PROC_NULL_RANK = -3,  /* MPI_PROC_NULL */
  STRATA_NO_TAG = -1000000     /* the call has no tag */
};

/* Event flags. */
enum {
  STRATA_EVENT_INTERCOMM = 1u << 0,       /* peer and root are ranks of the remote group */
  STRATA_EVENT_STATUS_FROM_CORE = 1u << 1 /* the application passed MPI_STATUS_IGNORE */
};

/* One MPI call, decoded once and shared by every event module of a chain segment.
 * Times are CLOCK_MONOTONIC nanoseconds. Bytes are count x type size. */
typedef struct strata_event {
  int function;           /* function id (strata_host::function_name) */
  unsigned flags;         /* STRATA_EVENT_* */
  uint64_t t_enter_ns;    /* set before the enter callbacks */
  uint64_t t_exit_ns;     /* set before the exit callbacks; 0 during enter */
  int64_t count;          /* the count argument (elements; summed for the v-variants) */
  int64_t bytes_sent;     /* payload this rank sends */
  int64_t bytes_expected; /* receive buffer capacity this rank posts */
  int64_t bytes_received; /* received payload from the status (exit), -1 when unknown */
  int peer;               /* world rank of dest/source or a STRATA_*_RANK value */
  int source;             /* world rank of the actual source from the status (exit), or peer */
  int tag;                /* STRATA_NO_TAG when none */
  int root;               /* world rank of the root or STRATA_NO_RANK */
  int is_root;            /* this rank is the root */
  uint32_t comm_id;       /* stable id of the communicator within this process, 0 = none */
  int comm_size;          /* its size (local group), 0 = none */
  uint64_t request;       /* request handle created (exit) or completed (enter), 0 = none */
  int request_count;      /* length of the request array of Waitall & co. */
  const void* requests;   /* that array (MPI_Request*), valid during the call */
  const void* call_site;  /* return address into the caller of the MPI function */
  int result;             /* the MPI return code (exit) */
  int thread_layer;       /* reserved */
  /* Appended in the same ABI version (modules built against the shorter struct never read them):
   * the communicator's (remote) group as world ranks, indexed by rank in the communicator;
   * NULL when it is the identity (MPI_COMM_WORLD) or there is no communicator. Valid for the
   * communicator's lifetime. comm_rank: this process's rank in it (-1 = none). */
  const int* comm_world_ranks;
  int comm_rank;
  /* From the status (exit), as MPI wrote it: the source as a rank in the communicator and the
   * tag; STRATA_NO_RANK / STRATA_NO_TAG when there is no status. */
  int status_source;
  int status_tag;
} strata_event;

typedef void (*strata_event_fn)(strata_event* event, void* state);

struct strata_clock_check;

/* What the core offers a module. Valid from `load` until `unload`. */
typedef struct strata_host {
  uint32_t abi_version;
  const char* mpi_flavor;
  int (*function_count)(void);
  const char* (*function_name)(int function);
  int (*function_id)(const char* name); /* -1 when the MPI library has no such function */
  /* Event delivery for the functions matching a comma-separated list of globs
   * ("MPI_Send,MPI_Recv", "MPI_*[sS]end", "*"). Returns the number of functions subscribed. */
  int (*subscribe)(int self, const char* glob);
  /* Inter-module services (PnMPI): a named pointer with a signature string that lookups must
   * match, e.g. publish(self, "profile.totals", "v1", &table). Returns 0, or -1 if taken. */
  int (*publish)(int self, const char* name, const char* signature, void* value);
  void* (*lookup)(const char* name, const char* signature);
  /* Named string values shared between modules (last writer wins). The core sets
   * "strata.init_language": "Fortran" when the program started MPI through a Fortran binding
   * (mpif.h, use mpi, use mpi_f08), else "C"; and "strata.probe": "1" during a `load` that only
   * checks the module for the `strata` command (no MPI program: start nothing costly there). */
  void (*set_value)(const char* name, const char* value);
  const char* (*get_value)(const char* name);
  uint64_t (*now_ns)(void);
  /* The layer this thread's MPI calls start from: -1 = top of the stack. Returns the old one.
   * A module that wants its own calls observed by the whole stack sets -1 and restores. */
  int (*set_layer)(int layer);
  /* One line on stderr, prefixed with "strata: <module>: ". */
  void (*log)(int self, const char* message);
  int (*layer_count)(void);
  /* From mpi_ready only, for a module that exports strata_module_takes_ranks_v1, on every
   * process (a collective call): the application's MPI_COMM_WORLD becomes *(MPI_Comm*)comm in
   * every call it makes (C and Fortran alike), and world() a duplicate of it for the modules
   * after this one (MPI_COMM_WORLD in their own calls too). Calls made at the replacing module's
   * own layer still reach the real world: its wrappers' calls of ZMPI_X, and its callbacks' own
   * calls only where they start from its layer (alone in the stack, or with
   * STRATA_MODULE_OWN_CALLS_SEEN_SYMBOL); so it names its own communicators, never
   * MPI_COMM_WORLD, for its own traffic. On a process the module keeps for itself, comm points to
   * MPI_COMM_NULL: that process must end with end_process, never return to the application.
   * Returns 0 or -1. */
  int (*replace_world)(int self, const void* comm);
  /* Appended in the same ABI version: the application's call site (return address into the
   * caller of the MPI function) of the call this thread is in, for wrapper modules, which cannot
   * see it themselves (outside a call: the last one's; null before the first). */
  const void* (*call_site)(void);
  /* Appended in the same ABI version: the application's processes as one communicator for the
   * module's own traffic, *(const MPI_Comm*)world(): private to tools (MPI's own duplicate of
   * the application's world, or a communicator of the core's own MPI session over "mpi://WORLD"
   * where the library has Sessions), and without the processes a module took out of the
   * application's world (replace_world). Valid from mpi_ready until finalize has returned;
   * null outside. Ranks in it are the world ranks of strata_event. */
  const void* (*world)(void);
  /* Appended in the same ABI version: ends a process that a module took out of the application's
   * world (replace_world with MPI_COMM_NULL), which never returns from the application's init:
   * the core closes what it opened, MPI is finalized without the other modules' finalize, and
   * the process exits with `status`. */
  void (*end_process)(int self, int status);
  /* Appended in the same ABI version: the event clock (now_ns, the events' times) checked
   * against CLOCK_MONOTONIC now, on this thread's CPU; for the figures at finalize and at
   * subtotals. `out->size` is set by the caller; returns 0. */
  int (*check_clock)(struct strata_clock_check* out);
} strata_host;

/* A check of the event clock (strata_host::check_clock). The event clock reads the CPU's
 * time-stamp counter where the CPU says it is invariant, scaled by a rate calibrated against
 * CLOCK_MONOTONIC from the library's load to the end of MPI_Init (the anchor); the check reads
 * both clocks again and compares. */
typedef struct strata_clock_check {
  uint32_t size;                  /* sizeof(strata_clock_check), set by the caller */
  int tsc;                        /* 1: the time-stamp counter; 0: clock_gettime(CLOCK_MONOTONIC) */
  const char* fallback_reason;    /* why not the TSC; "" when it is */
  const char* kernel_clocksource; /* the kernel's clock source ("tsc", "kvm-clock", ...) */
  double tsc_hz;                  /* the calibrated rate, ticks per second; 0 without the TSC */
  double calibration_s;           /* the interval the rate was measured over */
  double checked_over_s;          /* CLOCK_MONOTONIC time from the anchor to this check */
  int64_t offset_ns;              /* event clock minus CLOCK_MONOTONIC, now */
  double drift_ppm;               /* offset_ns over checked_over_s, parts per million */
  int anchor_cpu;                 /* the CPU of the calibration's last reading; -1: not known */
  int check_cpu;                  /* the CPU of this check's readings; -1: not known */
  /* 1: the offset is within the tolerance (1 us, or 100 ppm of checked_over_s, whichever is
   * larger). 0: durations timed with the event clock are off by `correction`'s inverse; when
   * the anchor and the check were on one CPU, that is the rate's error, and multiplying
   * durations by `correction` puts them on CLOCK_MONOTONIC; across CPUs a step between the
   * CPUs' counters cannot be told from a rate error, and `correctable` is 0. */
  int trusted;
  int correctable;
  double correction; /* CLOCK_MONOTONIC time over event-clock time since the anchor; 1 if trusted */
} strata_clock_check;

/* strata_host::set_layer(STRATA_LAYER_MPI): this thread's calls go straight to the MPI library. */
#define STRATA_LAYER_MPI 0x7fffffff

typedef struct strata_module_arg {
  const char* key;
  const char* value;
} strata_module_arg;

typedef struct strata_module {
  uint32_t abi_version; /* STRATA_MODULE_ABI_VERSION */
  const char* name;
  const char* mpi_flavor; /* STRATA_MPI_FLAVOR */
  const char* description;
  /* Called before MPI_Init reaches MPI, in stack order. `self` is the module's layer. Return 0,
   * or write a one-line reason into `error` and return non-zero: the job then stops with it. */
  int (*load)(const strata_host* host, int self, const strata_module_arg* args, int nargs,
              void** state, char* error, size_t error_size);
  void (*mpi_ready)(void* state); /* after MPI_Init returned; MPI may be used */
  strata_event_fn enter;
  strata_event_fn exit;
  void (*pcontrol)(int level, void* state); /* MPI_Pcontrol(level) */
  void (*finalize)(void* state);            /* before MPI_Finalize; MPI may be used */
  void (*unload)(void* state);
} strata_module;

typedef const strata_module* (*strata_module_entry)(void);

/* Optional: sampled polls. Calls with a completion flag (MPI_Test, MPI_Testany, MPI_Iprobe) are
 * polled millions of times by some programs, and most complete nothing. An event module that
 * exports
 *     uint32_t strata_module_polls_v1(void* state, strata_event_fn* untimed);
 * (called once after `load`) lets the core time and fully deliver only about one poll in the
 * interval it returns (1 or 0: every poll, as without the symbol); each other poll reaches
 * *untimed instead of enter/exit, after the call, with t_enter_ns = t_exit_ns = 0: decoded when
 * it completed something (after the call: a completed request reads as MPI_REQUEST_NULL), else
 * with only function, call_site and result set.
 * The core samples a chain segment only when every event module in it exports this, at the
 * smallest interval among them; the choice of polls is pseudo-random per thread, so periodic
 * patterns in the program cannot alias with it. */
#define STRATA_MODULE_POLLS_SYMBOL "strata_module_polls_v1"
typedef uint32_t (*strata_module_polls_entry)(void* state, strata_event_fn* untimed);

/* Optional: counting without events. Some calls need no event at all: a call that cannot wait
 * (MPI_Comm_rank, MPI_Type_size, MPI_Wtime, ...) when the module wants only how many were made,
 * and a sampled poll that was not timed and completed nothing. An event module that exports
 *     uint64_t* strata_module_counter_v1(void* state, int function, int what);
 * is asked, per subscribed function, for a 64-bit counter:
 *   STRATA_COUNT_CALLS        every call of `function` is only counted: no event, no clock read,
 *                             no decoding, no callback;
 *   STRATA_COUNT_EMPTY_POLLS  (polls, with strata_module_polls_v1) an untimed poll whose flag is
 *                             false after the call is only counted; untimed polls that complete
 *                             something still reach the untimed callback, decoded.
 *   STRATA_COUNT_UNTIMED_POLLS (polls, with strata_module_polls_v1) every untimed poll is only
 *                             counted, whether or not it completed something, and nothing is
 *                             read after the call: the core may jump straight into MPI (no
 *                             frame of its own, which a memory-bound polling loop can feel far
 *                             beyond the poll's few instructions), so the module never learns
 *                             what an untimed poll completed (its bytes). The timed polls are
 *                             delivered as ever. The core asks for this first and, when the
 *                             module returns null, for STRATA_COUNT_EMPTY_POLLS.
 * A null return keeps the events. The core adds 1 per call, after the call, with a relaxed atomic
 * add when MPI_Query_thread says MPI_THREAD_MULTIPLE and a plain add otherwise. It asks once,
 * after every module's mpi_ready has returned (counters may live in memory set up there, such as
 * a file mapping) and before MPI_Init returns to the application; until then events are delivered
 * as without the symbol. Counters must stay valid until unload. A chain segment counts instead of
 * delivering only when every event module in it returns a counter for that function; each is
 * asked all the same (the question for STRATA_COUNT_EMPTY_POLLS tells a module that the core
 * samples that routine's polls). */
enum { STRATA_COUNT_CALLS = 1, STRATA_COUNT_EMPTY_POLLS = 2, STRATA_COUNT_UNTIMED_POLLS = 3 };
#define STRATA_MODULE_COUNTER_SYMBOL "strata_module_counter_v1"
typedef uint64_t* (*strata_module_counter_entry)(void* state, int function, int what);

/* Optional: timed calls counted by the core. A module that wants of some function's calls only
 * the figures below can lend the core one slot per function, and the core then sums each timed
 * call into it after the call instead of delivering an event: no event is built and no callback
 * runs. An event module that exports
 *     int strata_module_timed_counts_v1(void* state, int function, strata_timed_counts* out);
 * is asked per subscribed function, after strata_module_counter_v1's questions, where the
 * module's entry is the only event module of its chain segment with only MPI below it, has an
 * exit callback and no enter callback, and every call of the function is timed (no counting, no
 * sampled polls); never when MPI_Query_thread says MPI_THREAD_MULTIPLE (the core's adds are
 * plain). Return non-zero with out->slot and out->latest_exit_ns set to take it, or 0 to keep the
 * events (non-zero with either left null keeps them too, and the core says so in one line per
 * module at MPI_Init). Per call, with t the exit time less the entry time (both the event
 * clock's): calls += 1, time_ns += t, min_ns and max_ns kept, count_sum += the event's count,
 * bytes_sent and bytes_received += the event's (negative as 0), with STRATA_TIMED_SIZE_HISTOGRAM
 * size_hist[strata_size_bin(message size)] += 1 (the bytes sent, else received, else expected),
 * with STRATA_TIMED_COMM_HISTOGRAM comm_hist[strata_comm_bin(communicator size)] += 1; and
 * *latest_exit_ns = the exit time of the first call, then of the first call more than a
 * millisecond after the one last written (not of every call: a rank that dies may have it short
 * by that much). The slot must stay valid
 * until unload; the core goes on adding while the module is paused (MPI_Pcontrol(0)): keep the
 * values at the pause and put them back. */
#define STRATA_TIMED_SIZE_BINS 40 /* bin 0: 0 bytes; bin k: [2^(k-1), 2^k); the last open */
#define STRATA_TIMED_COMM_BINS 32 /* bin k: [2^k, 2^(k+1)) processes; the last open */
typedef struct strata_timed_slot {
  uint64_t calls;
  uint64_t time_ns;
  uint64_t min_ns; /* UINT64_MAX before the first call */
  uint64_t max_ns;
  uint64_t count_sum;
  uint64_t bytes_sent;
  uint64_t bytes_received;
  uint64_t size_hist[STRATA_TIMED_SIZE_BINS];
  uint64_t comm_hist[STRATA_TIMED_COMM_BINS];
} strata_timed_slot;
enum { STRATA_TIMED_SIZE_HISTOGRAM = 1u << 0, STRATA_TIMED_COMM_HISTOGRAM = 1u << 1 };
/* The messages one rank sent to one destination (a world rank), and their bytes. */
typedef struct strata_pair_sum {
  uint64_t messages;
  uint64_t bytes;
} strata_pair_sum;
/* A persistent request whose starts the core counts (strata_timed_counts::started): per start,
 * sums[0] += 1 and sums[1] += bytes, sums being the first two members of a strata_pair_sum
 * (messages, bytes) or of a strata_comm_sum (calls, bytes); NULL: nothing counted. */
typedef struct strata_started_slot {
  uint64_t handle; /* the request's handle bits (as strata_event::request); 0: an empty slot */
  uint64_t* sums;
  uint64_t bytes;
  uint64_t reserved; /* 32 bytes a slot */
} strata_started_slot;
#define STRATA_STARTED_SLOTS 16384 /* 2^14 */
/* The slot where a handle's search starts (then the next, modulo STRATA_STARTED_SLOTS). */
static inline uint32_t strata_started_home(uint64_t handle) {
  return (uint32_t)((handle * 0x9e3779b97f4a7c15ULL) >> 50);
}
/* One rank's collective calls on one communicator (strata_timed_counts::comms), and the group
 * they ran on as the event gave it (comm_world_ranks, comm_size, flags). */
typedef struct strata_comm_sum {
  uint64_t calls;
  uint64_t bytes; /* the bytes sent, as the event's bytes_sent */
  const int* world_ranks;
  int32_t size;
  uint32_t flags;
} strata_comm_sum;
typedef struct strata_timed_counts {
  strata_timed_slot* slot;
  uint64_t* latest_exit_ns;
  uint32_t histograms; /* STRATA_TIMED_*_HISTOGRAM bits */
  /* Appended in the same ABI version (the core zeroes the struct before asking): for a function
   * that sends to its peer, an array indexed by the destination's world rank (event's peer),
   * `pair_count` long, into which the core adds per call messages += 1 and bytes += the bytes
   * sent, for a peer in [0, pair_count) (not MPI_PROC_NULL; the core reads it from the call's
   * arguments, not from the event, so the module need not read STRATA_FIELD_PEER for it, only
   * for the calls that still reach it as events). NULL: no such sums. */
  strata_pair_sum* pairs;
  uint32_t pair_count;
  /* Appended likewise: for MPI_Start and MPI_Startall only, a function the core calls after each
   * call it summed, with the call's event as decoded for the module's fields (the result, the
   * request or the request array: STRATA_FIELD_REQUESTS) and the module's state: what a start
   * sends is known only to whoever saw its request made (MPI_Send_init). Not called while the
   * module's other callbacks run, nor from two threads at once (no MPI_THREAD_MULTIPLE). NULL:
   * none. Ignored for every other function. */
  strata_event_fn after_start;
  /* Appended likewise: for a collective, an array indexed by the event's comm_id, `comm_count`
   * long, into which the core adds per call calls += 1 and bytes += the bytes sent, and writes
   * the event's comm_world_ranks, comm_size and flags; a comm_id of comm_count or more goes to
   * the last element. The module must then read the communicator (STRATA_FIELD_COMM) and the
   * bytes of that function. NULL: no such sums. */
  strata_comm_sum* comms;
  uint32_t comm_count;
  /* Appended likewise: for MPI_Start and MPI_Startall, instead of after_start, the module's
   * table of the persistent requests whose starts it counts: STRATA_STARTED_SLOTS slots of open
   * addressing by handle (strata_started_home, then the next slot; at least one slot empty, so
   * that an empty slot ends every search). After a call that returned MPI_SUCCESS, the core
   * looks each request it started up and adds the start to the slot's sums (strata_started_slot):
   * no event, no callback. The module fills the table from the events of the calls that make
   * requests (never summed by the core: they must reach it as events), and never while a start
   * runs (the core sums only without MPI_THREAD_MULTIPLE). NULL: none (after_start is called,
   * if set). */
  const strata_started_slot* started;
} strata_timed_counts;
static inline int strata_size_bin(uint64_t bytes) {
  const int bin = bytes == 0 ? 0 : 64 - __builtin_clzll(bytes);
  return bin < STRATA_TIMED_SIZE_BINS ? bin : STRATA_TIMED_SIZE_BINS - 1;
}
static inline int strata_comm_bin(uint64_t size) {
  const int bin = size == 0 ? 0 : 63 - __builtin_clzll(size);
  return bin < STRATA_TIMED_COMM_BINS ? bin : STRATA_TIMED_COMM_BINS - 1;
}
#define STRATA_MODULE_TIMED_COUNTS_SYMBOL "strata_module_timed_counts_v1"
typedef int (*strata_module_timed_counts_entry)(void* state, int function,
                                                strata_timed_counts* out);

/* Optional: the fields a module reads. An event module that exports
 *     uint32_t strata_module_fields_v1(void* state);
 * (asked once after `load`) returns an or of STRATA_FIELD_* bits, and the core sets only those
 * groups of fields (and always function, flags, t_enter_ns, t_exit_ns, call_site, result and
 * thread_layer) in the events of the chain segments it is in: the union of what the segment's
 * modules declare, computed once when the stack is built. A field outside the union holds
 * whatever the stack left there: a module must not read a field it did not declare. The core
 * may set more than the union asks (a group another needs, such as the communicator for world
 * ranks). A module without the symbol gets every field, set as before it existed; so does every
 * module of a segment with one such module. The bits tell the core what to decode: the
 * communicator's lookup, the datatype sizes and the status are most of a call's decoding. */
enum {
  STRATA_FIELD_COMM = 1u << 0,     /* comm_id, comm_size, comm_rank, comm_world_ranks, and the
                                      STRATA_EVENT_INTERCOMM flag */
  STRATA_FIELD_PEER = 1u << 1,     /* peer, root, is_root */
  STRATA_FIELD_TAG = 1u << 2,      /* tag (a wildcard resolved from the status at exit) */
  STRATA_FIELD_BYTES = 1u << 3,    /* count, bytes_sent, bytes_expected */
  STRATA_FIELD_REQUESTS = 1u << 4, /* request, request_count, requests */
  STRATA_FIELD_STATUS = 1u << 5,   /* bytes_received, source, status_source, status_tag, and the
                                      STRATA_EVENT_STATUS_FROM_CORE flag */
  STRATA_FIELD_RECEIVED = 1u << 6, /* bytes_received and STRATA_EVENT_STATUS_FROM_CORE alone (part
                                      of STATUS, without the source's world rank and the tag) */
  STRATA_FIELD_ALL = (1u << 7) - 1
};
#define STRATA_MODULE_FIELDS_SYMBOL "strata_module_fields_v1"
typedef uint32_t (*strata_module_fields_entry)(void* state);

/* Optional, for a module that reads less of some functions' events than of others: an event
 * module that exports
 *     uint32_t strata_module_function_fields_v1(void* state, int function);
 * (asked once for every function id after strata_module_fields_v1) returns the STRATA_FIELD_*
 * bits it reads of that function's events, in place of strata_module_fields_v1's for all; the
 * same rules hold for each function. */
#define STRATA_MODULE_FUNCTION_FIELDS_SYMBOL "strata_module_function_fields_v1"
typedef uint32_t (*strata_module_function_fields_entry)(void* state, int function);

#define STRATA_MODULE_SYMBOL "strata_module_v1"

/* Optional: declared options. A module that exports
 *     const strata_module_options* strata_module_options_v1(void);
 * has its arguments resolved by the core before `load` (and before strata_module_takes_ranks_v1):
 * each option's value is the stack's argument (--tools name:key=value, a config file's
 * key=value), else the environment variable STRATA_<MODULE>_<KEY> (upper case, '-' and other
 * signs '_'), else one of the option's older variable names (`env`), else its default. A key the
 * module does not declare, or a value not of its option's type, stops the job before it starts
 * with one line naming the module, the option and the problem; `load` gets every option that has
 * a value, in declaration order, as text already checked against its type. `strata modules NAME`
 * lists them. Types: "int", "uint", "double", "bool" (1/0, true/false, yes/no, on/off), "size"
 * (bytes; 512K, 64M, 2G), "duration" (seconds; 2.5, 250ms, 40us, 10s), "enum:a|b|c", "string",
 * "list" (comma- or '+'-separated text). */
typedef struct strata_option {
  const char* key;           /* "usec" */
  const char* type;          /* one of the types above */
  const char* default_value; /* as text; NULL: no value unless given */
  const char* help;          /* one line */
  const char* env;           /* older environment names, comma-separated; NULL for none */
} strata_option;

typedef struct strata_module_options {
  uint32_t size; /* sizeof(strata_module_options) */
  int count;
  const strata_option* options;
} strata_module_options;

typedef const strata_module_options* (*strata_module_options_entry)(void);

#define STRATA_MODULE_OPTIONS_SYMBOL "strata_module_options_v1"

/* Optional: the module's own MPI calls are seen by the layers below it (the default hides them).
 * A module that wants this exports a non-zero `const int strata_module_own_calls_seen_v1`. */
#define STRATA_MODULE_OWN_CALLS_SEEN_SYMBOL "strata_module_own_calls_seen_v1"

/* Optional: a module that takes processes out of the application's world (to run tools on them,
 * as the monitor's tree does) exports
 *     int strata_module_takes_ranks_v1(const strata_module_arg* args, int nargs);
 * answering, before `load`, whether it will with these arguments. The core then places it first
 * in the stack, whatever the order the user wrote, so that every other module starts from the
 * application's processes only; a stack with two such modules is refused. Its mpi_ready sees
 * the whole world (strata_host::world) and calls strata_host::replace_world. */
#define STRATA_MODULE_TAKES_RANKS_SYMBOL "strata_module_takes_ranks_v1"
typedef int (*strata_module_takes_ranks_entry)(const struct strata_module_arg* args, int nargs);

/* Optional, beside strata_module_takes_ranks_v1: how many processes the module takes beside
 * `app_ranks` application ranks, with these (resolved) arguments. `strata run -np P` starts
 * P + that many processes; the module finds P again from the size of the world. */
#define STRATA_MODULE_EXTRA_RANKS_SYMBOL "strata_module_extra_ranks_v1"
typedef int (*strata_module_extra_ranks_entry)(const struct strata_module_arg* args, int nargs,
                                               int app_ranks);

/* Optional extension: the application's regions (include/strata/annotate.h). A module that wants
 * them exports, besides strata_module_v1,
 *     const strata_module_regions* strata_module_regions_v1(void);
 * Modules without it are unaffected, and when no module of the stack has it, an annotation costs
 * the application one call and one branch. The core calls `begin` / `end` on the annotating
 * thread, in stack order (their own MPI calls reach no other layer, as from any callback), from
 * the end of MPI_Init (after mpi_ready) until MPI_Finalize has returned (before unload).
 * `name` is the application's string and may not outlive the call (copy it); `call_site` is the
 * address the annotation returns to in the annotating function (null when unknown); `t_ns` is
 * the core's clock (strata_host::now_ns) read once for all modules. `size` is sizeof the struct the
 * module was built with: later versions append fields, and the core reads only what `size` covers.
 */
typedef void (*strata_region_fn)(const char* name, const void* call_site, uint64_t t_ns,
                                 void* state);

typedef struct strata_module_regions {
  uint32_t size; /* sizeof(strata_module_regions) */
  strata_region_fn begin;
  strata_region_fn end;
} strata_module_regions;

typedef const strata_module_regions* (*strata_module_regions_entry)(void);

#define STRATA_MODULE_REGIONS_SYMBOL "strata_module_regions_v1"

#ifdef __cplusplus
}
#endif

#endif /* STRATA_MODULE_H */
