// The `trace` module: every MPI call and every user region of each rank, kept in memory as fixed
// records (tracer/buffer.hpp) and written at finalize as one OTF2 archive per job, with the
// conventions of Score-P (docs/tracing.md) so that Vampir, Scalasca and `strata analyze` read it.
//
// Most functions are observed as events (one exit callback: the core's decoded event has both
// times; recording.cpp). The completion functions (Wait/Test and their -all/-any/-some forms) are
// wrapped (completions.cpp), since the requests they complete and the statuses they fill are gone
// or hidden by the time an event callback could read them. This file loads the module, sets it up
// once MPI is ready, and describes it to the core; finalize.cpp writes the archive.
#include "config/option_binder.hpp"
#include "tracer/module/state.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fnmatch.h>
#include <iterator>
#include <string_view>
#include <unistd.h>

namespace strata::trace {

trace_state* g_state = nullptr;

namespace {

uint64_t realtime_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

int trace_load(const strata_host* host, int self, const strata_module_arg* args, int nargs,
               void** state, char* error, size_t error_size) {
  auto s = std::make_unique<trace_state>();
  s->host = host;
  s->self = self;
  // The core resolved every declared option (declared_options()) and checked its type.
  if (std::string why = parse_options(config::argument_list(args, nargs), s->opt); !why.empty()) {
    std::snprintf(error, error_size, "%s", why.c_str());
    return 1;
  }
  const int count = host->function_count();
  s->functions.resize(static_cast<size_t>(count));
  for (int fid = 0; fid < count; ++fid) {
    fn_info& f = s->functions[static_cast<size_t>(fid)];
    f = classify(host->function_name(fid));
    f.counted = f.cheap && !s->opt.record_cheap_calls;
  }
  s->counted.assign(static_cast<size_t>(count), 0);
  // The completion functions are wrapped whatever the filter says; they record only if wanted.
  if (host->subscribe(self, s->opt.functions.c_str()) == 0) {
    std::snprintf(error, error_size, "functions=%s matches no MPI function",
                  s->opt.functions.c_str());
    return 1;
  }
  for (int fid = 0; fid < count; ++fid) {
    const char* name = host->function_name(fid);
    std::string_view rest(s->opt.functions);
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string glob(rest.substr(0, comma));
      if (!glob.empty() && ::fnmatch(glob.c_str(), name, 0) == 0)
        s->functions[static_cast<size_t>(fid)].wanted = true;
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  s->buffer =
      std::make_unique<event_buffer>(s->opt.limit_bytes, s->opt.policy, s->opt.prefault_bytes);
  s->comm_index.resize(64, 0);
  s->open_regions.reserve(256);
  s->region_names.reserve(64);
  s->traced_thread = pthread_self(); // load runs on the thread that calls MPI_Init
  g_state = s.get();
  *state = s.release();
  return 0;
}

void trace_mpi_ready(void* raw) {
  auto* s = static_cast<trace_state*>(raw);
  // The application's processes, private to the tools (strata_host::world).
  s->world = *static_cast<const MPI_Comm*>(s->host->world());
  MPI_Comm_rank(s->world, &s->rank);
  MPI_Comm_size(s->world, &s->world_size);
  s->init_mono = s->host->now_ns();
  s->init_real = realtime_ns();
  if (s->opt.start_s > 0)
    s->window_begin = s->init_mono + static_cast<uint64_t>(s->opt.start_s * 1e9);
  if (s->opt.stop_s >= 0)
    s->window_end = s->init_mono + static_cast<uint64_t>(s->opt.stop_s * 1e9);
  // One directory for the job: the resource manager's id, else rank 0's start time and pid.
  char dir[4096] = {0};
  if (s->rank == 0) {
    std::string d = s->opt.dir;
    if (d.empty()) {
      std::string job = job_id_from_environment([](const char* n) { return std::getenv(n); });
      if (job.empty()) {
        char stamp[32];
        const time_t now = ::time(nullptr);
        tm local{};
        ::localtime_r(&now, &local);
        std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
        job = std::string(stamp) + "-" + std::to_string(::getpid());
      }
      d = default_trace_dir(job);
    }
    std::snprintf(dir, sizeof(dir), "%s", d.c_str());
  }
  MPI_Bcast(dir, sizeof(dir), MPI_CHAR, 0, s->world);
  s->dir = dir;
  s->clock.t1 = s->host->now_ns();
  s->clock.o1 = measure_offset(s, s->stddev_init);
}

void trace_unload(void* raw) {
  auto* s = static_cast<trace_state*>(raw);
  if (g_state == s)
    g_state = nullptr;
  delete s;
}

const strata_module trace_module = {
    STRATA_MODULE_ABI_VERSION,
    "trace",
    STRATA_MPI_FLAVOR,
    "every MPI call and user region of each rank, written as one OTF2 archive per job",
    trace_load,
    trace_mpi_ready,
    nullptr,
    on_exit,
    nullptr,
    trace_finalize,
    trace_unload,
};

const strata_module_regions trace_regions = {sizeof(strata_module_regions), on_region_begin,
                                             on_region_end};

} // namespace
} // namespace strata::trace

extern "C" STRATA_MODULE_EXPORT const strata_module* strata_module_v1(void) {
  return &strata::trace::trace_module;
}

extern "C" STRATA_MODULE_EXPORT const strata_module_options* strata_module_options_v1(void) {
  return strata::trace::declared_options();
}

extern "C" STRATA_MODULE_EXPORT const strata_module_regions* strata_module_regions_v1(void) {
  return &strata::trace::trace_regions;
}

// Counting without events (module.h): a call that never waits and costs a few ns (MPI_Wtime,
// MPI_Comm_rank, ...) would otherwise cost a record of 72 bytes, and a program that reads the
// clock millions of times would fill the buffer with them and crowd out its messages.
extern "C" STRATA_MODULE_EXPORT uint64_t* strata_module_counter_v1(void* state, int function,
                                                                   int what) {
  auto* s = static_cast<strata::trace::trace_state*>(state);
  if (s == nullptr || what != STRATA_COUNT_CALLS || function < 0 ||
      static_cast<size_t>(function) >= s->functions.size() ||
      !s->functions[static_cast<size_t>(function)].counted)
    return nullptr;
  return &s->counted[static_cast<size_t>(function)];
}
