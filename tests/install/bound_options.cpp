// A module written outside Strata's tree in C++ whose options are read through Strata's option
// binder (strata/option_binder.hpp, CMake's Strata::option_binder): each declared once with its
// field, default and range; `strata modules` lists them, and load takes the values the core
// resolved. At finalize every rank logs the values it took (tests/integration/test_install.py).
#include <mpi.h>
#include <strata/module.h>
#include <strata/option_binder.hpp>

#include <cstdint>
#include <cstdio>
#include <string>

namespace {

struct settings {
  std::string label;
  double every_s = 0;
  std::uint64_t bytes = 0;
  unsigned count = 0;
};
settings values;

strata::config::option_binder& binder() {
  static strata::config::option_binder b = [] {
    strata::config::option_binder o;
    o.add_string("label", values.label, "bound", "a word that starts each line this module logs")
        .add_duration("every", values.every_s, "1s", "how often (a duration: 2.5, 250ms, 1m)")
        .add_size("bytes", values.bytes, "4K", "how much (a size: 4096, 512K, 64M)", 1)
        .add_uint("count", values.count, "3", "how many (1 to 10)", 1, 10);
    return o;
  }();
  return b;
}

const strata_host* host;
int layer;

int load(const strata_host* h, int self, const strata_module_arg* args, int nargs, void** state,
         char* error, size_t error_size) {
  host = h;
  layer = self;
  *state = nullptr;
  const std::string problem = binder().take(args, nargs);
  if (!problem.empty()) {
    std::snprintf(error, error_size, "%s", problem.c_str());
    return 1;
  }
  return 0;
}

void finalize(void*) {
  int rank = -1;
  MPI_Comm_rank(*static_cast<const MPI_Comm*>(host->world()), &rank);
  char line[200];
  std::snprintf(line, sizeof line, "%s rank %d: every=%g s bytes=%llu count=%u",
                values.label.c_str(), rank, values.every_s,
                static_cast<unsigned long long>(values.bytes), values.count);
  host->log(layer, line);
}

const strata_module module = {STRATA_MODULE_ABI_VERSION,
                              "bound_options",
                              STRATA_MPI_FLAVOR,
                              "reads its options through Strata's option binder",
                              load,
                              nullptr,
                              nullptr,
                              nullptr,
                              nullptr,
                              finalize,
                              nullptr};

} // namespace

extern "C" STRATA_MODULE_EXPORT const strata_module* strata_module_v1(void) {
  return &module;
}

extern "C" STRATA_MODULE_EXPORT const strata_module_options* strata_module_options_v1(void) {
  return binder().declared();
}
