// The `delay` module (PnMPI's test module): holds each send for a configured time before it
// reaches MPI, to inject a known imbalance (options: delay_options below).
#include "config/option_binder.hpp"

#include <mpi.h>
#include <strata/module.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>

namespace {

struct delay_state {
  const strata_host* host = nullptr;
  uint64_t delay_ns = 0;
  uint64_t every = 1;
  std::atomic<uint64_t> seen{0};
};

void delay_enter(strata_event*, void* raw) {
  auto* s = static_cast<delay_state*>(raw);
  if (s->seen.fetch_add(1, std::memory_order_relaxed) % s->every != 0)
    return;
  // Busy-wait: a sleep's wake-up latency would make the injected time imprecise.
  const uint64_t until = s->host->now_ns() + s->delay_ns;
  while (s->host->now_ns() < until) {
  }
}

// The options as the core gives them at load (it gives every one its value).
struct delay_settings {
  uint64_t usec = 0, every = 1;
  std::string functions;
};
delay_settings given;

strata::config::option_binder& delay_options() {
  static strata::config::option_binder options = [] {
    strata::config::option_binder b;
    b.add_uint("usec", given.usec, "0", "hold each matching call this many microseconds", 0,
               UINT64_MAX / 1000);
    b.add_uint("every", given.every, "1", "hold every K-th matching call only (K > 0)", 1);
    b.add_list("functions", given.functions, "MPI_*[sS]end,MPI_*[sS]end_c",
               "the calls to hold: comma- or '+'-separated globs of MPI functions");
    return b;
  }();
  return options;
}

int delay_load(const strata_host* host, int self, const strata_module_arg* args, int nargs,
               void** state, char* error, size_t error_size) {
  if (const std::string problem = delay_options().take(args, nargs); !problem.empty()) {
    std::snprintf(error, error_size, "%s", problem.c_str());
    return 1;
  }
  auto s = std::make_unique<delay_state>();
  s->host = host;
  s->delay_ns = given.usec * 1000;
  s->every = given.every;
  if (host->subscribe(self, given.functions.c_str()) == 0) {
    std::snprintf(error, error_size, "functions=%s matches no MPI function",
                  given.functions.c_str());
    return 1;
  }
  *state = s.release();
  return 0;
}

void delay_unload(void* state) {
  delete static_cast<delay_state*>(state);
}

const strata_module delay_module = {
    STRATA_MODULE_ABI_VERSION,
    "delay",
    STRATA_MPI_FLAVOR,
    "holds each send for usec microseconds before it reaches MPI",
    delay_load,
    nullptr,
    delay_enter,
    nullptr,
    nullptr,
    nullptr,
    delay_unload,
};

} // namespace

extern "C" STRATA_MODULE_EXPORT const strata_module* strata_module_v1(void) {
  return &delay_module;
}

extern "C" STRATA_MODULE_EXPORT const strata_module_options* strata_module_options_v1(void) {
  return delay_options().declared();
}
