// The application's region annotations (include/strata/annotate.h) and the modules that asked for
// them (strata_module_regions_v1, include/strata/module.h).
#pragma once

#include <strata/module.h>

#include <atomic>
#include <cstddef>

namespace strata::core {

struct region_listener {
  strata_region_fn begin = nullptr;
  strata_region_fn end = nullptr;
  void* state = nullptr;
  int layer = 0;       // the module's position: its own annotations reach only those below
  int calls_layer = 0; // where the callback's own MPI calls start
};

// Filled while the stack loads; `region_listener_count` is published (release) once the modules
// are ready and set back to 0 before they unload, so an annotation outside that window, or in a
// job whose stack wants no regions, costs one load and one branch.
constexpr size_t max_region_listeners = 64;
extern region_listener region_listeners[max_region_listeners] __attribute__((visibility("hidden")));
extern std::atomic<int> region_listener_count __attribute__((visibility("hidden")));
extern int region_listener_pending __attribute__((visibility("hidden")));

// Looks up the module's optional strata_module_regions_v1 and keeps its callbacks (load time).
void add_region_listener(void* handle, void* state, int layer, int calls_layer);

} // namespace strata::core
