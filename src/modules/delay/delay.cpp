// The `delay` module (PnMPI's test module): holds each send for a configured time before it
// reaches MPI, to inject a known imbalance. Arguments: usec=N (default 0), functions=GLOB
// (default the point-to-point sends: "MPI_*[sS]end,MPI_*[sS]end_c"), every=K (delay every K-th
// matching call).
#include <mpi.h>
#include <strata/module.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct delay_state {
  const strata_host* host = nullptr;
  uint64_t delay_ns = 0;
  uint64_t every = 1;
  std::atomic<uint64_t> seen{0};
};

bool parse_count(const char* text, uint64_t& out) {
  if (text == nullptr || *text == '\0')
    return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || text[0] == '-')
    return false;
  out = v;
  return true;
}

void delay_enter(strata_event*, void* raw) {
  auto* s = static_cast<delay_state*>(raw);
  if (s->seen.fetch_add(1, std::memory_order_relaxed) % s->every != 0)
    return;
  // Busy-wait: a sleep's wake-up latency would make the injected time imprecise.
  const uint64_t until = s->host->now_ns() + s->delay_ns;
  while (s->host->now_ns() < until) {
  }
}

int delay_load(const strata_host* host, int self, const strata_module_arg* args, int nargs,
               void** state, char* error, size_t error_size) {
  auto* s = new delay_state();
  s->host = host;
  std::string functions = "MPI_*[sS]end,MPI_*[sS]end_c";
  for (int i = 0; i < nargs; ++i) {
    uint64_t value = 0;
    if (std::strcmp(args[i].key, "usec") == 0 && parse_count(args[i].value, value)) {
      s->delay_ns = value * 1000;
    } else if (std::strcmp(args[i].key, "every") == 0 && parse_count(args[i].value, value) &&
               value > 0) {
      s->every = value;
    } else if (std::strcmp(args[i].key, "functions") == 0) {
      functions = args[i].value;
    } else {
      std::snprintf(error, error_size,
                    "bad argument %s=%s (expected usec=N, every=N>0, "
                    "functions=GLOB)",
                    args[i].key, args[i].value);
      delete s;
      return 1;
    }
  }
  if (host->subscribe(self, functions.c_str()) == 0) {
    std::snprintf(error, error_size, "functions=%s matches no MPI function", functions.c_str());
    delete s;
    return 1;
  }
  *state = s;
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
