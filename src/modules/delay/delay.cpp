// The `delay` module (PnMPI's test module): holds each send for a configured time before it
// reaches MPI, to inject a known imbalance (options: delay_options below).
#include "config/options.hpp"

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

const strata_option delay_options[] = {
    {"usec", "uint", "0", "hold each matching call this many microseconds", nullptr},
    {"every", "uint", "1", "hold every K-th matching call only (K > 0)", nullptr},
    {"functions", "list", "MPI_*[sS]end,MPI_*[sS]end_c",
     "the calls to hold: comma- or '+'-separated globs of MPI functions", nullptr},
};
const strata_module_options delay_option_list = {
    sizeof(strata_module_options), static_cast<int>(std::size(delay_options)), delay_options};

// The core gives every option its value, checked against its type (delay_options).
int delay_load(const strata_host* host, int self, const strata_module_arg* args, int nargs,
               void** state, char* error, size_t error_size) {
  auto s = std::make_unique<delay_state>();
  s->host = host;
  std::string functions;
  for (int i = 0; i < nargs; ++i) {
    const std::string_view key = args[i].key;
    if (key == "usec")
      s->delay_ns = strata::config::parse_uint(args[i].value).value_or(0) * 1000;
    else if (key == "every")
      s->every = strata::config::parse_uint(args[i].value).value_or(1);
    else if (key == "functions")
      functions = args[i].value;
  }
  if (s->every == 0) {
    std::snprintf(error, error_size, "every=0: every K-th call needs K > 0");
    return 1;
  }
  for (char& c : functions)
    if (c == '+')
      c = ','; // commas separate modules in --tools
  if (host->subscribe(self, functions.c_str()) == 0) {
    std::snprintf(error, error_size, "functions=%s matches no MPI function", functions.c_str());
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
  return &delay_option_list;
}
