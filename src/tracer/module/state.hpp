// The trace module's state, shared by its parts: recording (events and regions), the wrapped
// completion functions, the clock offsets, and the archive written at finalize.
#pragma once

#include <mpi.h>
#include <strata/module.h>

#include "tracer/buffer.hpp"
#include "tracer/clock.hpp"
#include "tracer/options.hpp"
#include "tracer/request_table.hpp"
#include "tracer/routine_class.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <pthread.h>
#include <string>
#include <unordered_map>
#include <vector>

// Everything here is the module's own: hidden, so that the wrappers reach g_state directly rather
// than through the global offset table.
#pragma GCC visibility push(hidden)
namespace strata::trace {

struct trace_state {
  MPI_Comm world = MPI_COMM_NULL; // the tools' world of the application's processes
  const strata_host* host = nullptr;
  int self = 0;
  options opt;
  std::unique_ptr<event_buffer> buffer;
  std::vector<fn_info> functions;
  // Calls of the functions only counted (fn_info::counted), by function id: the core adds to
  // them (strata_module_counter_v1), or on_exit when a call reaches it all the same. Sized once,
  // at load: the core keeps pointers into it.
  std::vector<uint64_t> counted;
  pthread_t traced_thread = 0; // the thread that loaded the module, while recording
  uint64_t window_begin = 0;
  uint64_t window_end = std::numeric_limits<uint64_t>::max();
  int rank = 0;
  int world_size = 1;
  std::string dir;
  // Communicators: the core's comm id -> our index (0 = not yet seen), members as world ranks.
  std::vector<uint32_t> comm_index;
  std::vector<std::vector<int>> comm_members{{}};
  // Requests.
  request_table requests;
  uint32_t next_request = 1;
  // Persistent point-to-point requests by handle, from their MPI_Send_init or MPI_Recv_init (or
  // the partitioned MPI_Psend_init, MPI_Precv_init):
  // every start of one is a message of its own. A freed handle MPI hands out again for a new
  // persistent request is overwritten by its init; one reused for anything else is never started.
  struct persistent_request {
    uint32_t comm = 0;
    int32_t peer = 0; // world rank or STRATA_*_RANK
    int32_t tag = 0;
    int64_t bytes = 0;
    bool recv = false;
    bool partitioned = false; // MPI_Psend_init, MPI_Precv_init
  };
  std::unordered_map<uint64_t, persistent_request> persistent;
  // User regions: names by index, a pointer cache in front of the name map, the open regions.
  std::vector<std::string> region_names;
  std::vector<bool> region_wanted;
  std::unordered_map<std::string, uint32_t> region_by_name;
  struct cached_name {
    const char* pointer = nullptr;
    uint32_t index = 0;
  };
  cached_name name_cache[256];
  std::vector<int64_t> open_regions; // index, or -1 for a region not recorded
  uint64_t unbalanced_ends = 0;
  // Clock alignment.
  clock_line clock;
  double stddev_init = 0;
  double stddev_final = 0;
  uint64_t init_mono = 0;
  uint64_t init_real = 0;
};

extern trace_state* g_state;

// Only the thread that initialised MPI is traced (one OTF2 location per rank, events in order),
// and only while recording: `traced_thread` is that thread while recording, 0 otherwise, so one
// comparison with pthread_self() (a load from the thread pointer) says both.
inline bool tracing(const trace_state* s) {
  return pthread_equal(s->traced_thread, pthread_self()) != 0;
}

inline bool in_window(const trace_state* s, uint64_t t) {
  return t >= s->window_begin && t <= s->window_end;
}

// recording.cpp: the event module's exit callback and the region callbacks.
void on_exit(strata_event* ev, void* raw);
void on_region_begin(const char* name, const void* call_site, uint64_t t, void* raw);
void on_region_end(const char* name, const void* call_site, uint64_t t, void* raw);

// clock_offsets.cpp: rank 0's clock minus ours, from ping-pongs on `s->world`; the half
// round trip of the best one is the uncertainty.
int64_t measure_offset(trace_state* s, double& uncertainty);

// finalize.cpp: definitions unified over the ranks, the archive written.
void trace_finalize(void* raw);
// With analyze=1, after the archive is closed: the analysis of it on the job's own ranks
// (analysis_at_finalize.cpp). `events` are this rank's.
void analyze_at_finalize(trace_state* s, uint64_t events);

} // namespace strata::trace
#pragma GCC visibility pop
