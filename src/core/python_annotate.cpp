// Regions of Python programs (the `strata` package, python/strata): the same regions as
// include/strata/annotate.h's, with the Python line that entered them as their call site. The
// package calls these through ctypes from its own frame (a `with` block's __enter__/__exit__,
// or a decorated function's wrapper), so the site is taken one Python frame further out.
#include "core/dispatch.hpp"
#include "core/regions.hpp"

#include <strata/annotate.h>

namespace {

const void* python_caller() {
  // Nobody listening: not even the frames are read.
  if (strata::core::region_listener_count.load(std::memory_order_acquire) == 0)
    return nullptr;
  return strata::python_sites::current_site(1);
}

} // namespace

extern "C" STRATA_EXPORT void strata_python_region_begin(const char* name) {
  strata_annotate_region_begin_at(name, python_caller());
}

extern "C" STRATA_EXPORT void strata_python_region_end(const char* name) {
  strata_annotate_region_end_at(name, python_caller());
}
