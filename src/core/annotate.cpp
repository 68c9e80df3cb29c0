// The core side of the annotation API: strata_annotate_region_begin/end, which the inline
// wrappers of include/strata/annotate.h reach through weak references, hand each region to the
// modules that exported strata_module_regions_v1.
#include "core/dispatch.hpp"
#include "core/regions.hpp"

#include <dlfcn.h>

namespace strata::core {

region_listener region_listeners[max_region_listeners];
std::atomic<int> region_listener_count{0};
int region_listener_pending = 0;

void add_region_listener(void* handle, void* state, int layer, int calls_layer) {
  if (handle == nullptr || region_listener_pending >= static_cast<int>(max_region_listeners))
    return;
  auto entry =
      reinterpret_cast<strata_module_regions_entry>(::dlsym(handle, STRATA_MODULE_REGIONS_SYMBOL));
  const strata_module_regions* regions = entry != nullptr ? entry() : nullptr;
  // Fields are read only as far as the module's struct reaches.
  if (regions == nullptr || regions->size < sizeof(uint32_t) + 2 * sizeof(strata_region_fn))
    return;
  region_listener& l = region_listeners[region_listener_pending++];
  l.begin = regions->begin;
  l.end = regions->end;
  l.state = state;
  l.layer = layer;
  l.calls_layer = calls_layer;
}

namespace {

enum class edge { begin, end };

// A module's own annotations reach only the modules below it, as its MPI calls do.
template <edge E> inline void deliver(const char* name, const void* call_site) {
  const int count = region_listener_count.load(std::memory_order_acquire);
  if (__builtin_expect(count == 0, 1))
    return;
  thread_state& ts = tls;
  if (in_mpi_library(ts) || name == nullptr)
    return;
  const uint64_t t = now_ns();
  const int saved = ts.layer;
  for (int i = 0; i < count; ++i) {
    const region_listener& l = region_listeners[i];
    strata_region_fn fn = E == edge::begin ? l.begin : l.end;
    if (fn == nullptr || l.layer <= saved)
      continue;
    ts.layer = l.calls_layer;
    fn(name, call_site, t, l.state);
  }
  ts.layer = saved;
}

} // namespace
} // namespace strata::core

// The call site of a region is where the annotation returns to: the inline wrappers put these
// calls straight into the annotated function. Language bindings (the Fortran module) pass the
// site they were called from with the _at variants.
extern "C" STRATA_EXPORT void strata_annotate_region_begin_at(const char* name,
                                                              const void* call_site) {
  strata::core::deliver<strata::core::edge::begin>(name, call_site);
}

extern "C" STRATA_EXPORT void strata_annotate_region_end_at(const char* name,
                                                            const void* call_site) {
  strata::core::deliver<strata::core::edge::end>(name, call_site);
}

extern "C" STRATA_EXPORT void strata_annotate_region_begin(const char* name) {
  strata::core::deliver<strata::core::edge::begin>(name, __builtin_return_address(0));
}

extern "C" STRATA_EXPORT void strata_annotate_region_end(const char* name) {
  strata::core::deliver<strata::core::edge::end>(name, __builtin_return_address(0));
}
