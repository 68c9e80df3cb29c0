/* Strata annotations: the application's own abstraction levels (regions) and on-demand monitor
 * dumps.
 *
 *   C:        strata_region_begin("solver"); ... strata_region_end("solver");
 *   C++:      { STRATA_REGION("solver"); ... }   or   STRATA_FUNCTION();  at the top of a function
 *   Fortran:  use strata; call strata_region_begin("solver"); ... call strata_region_end("solver")
 *
 * Regions nest: level 0 is called by the application, level k+1 from inside a level-k region; MPI
 * calls made inside a region are one level below it. A program built with this header needs
 * nothing else at link time: the entry points below are weak, so without Strata (or before the
 * core is loaded) each call costs one test of a null pointer. When libstrata is loaded they reach
 * the core, which hands them to the modules that asked for regions (the trace module), and costs
 * one indirect call when none did.
 */
#ifndef STRATA_ANNOTATE_H
#define STRATA_ANNOTATE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Implemented by libstrata. The call site of a region is the return address of these calls, which
 * lies in the function that used the inline wrappers below. */
void strata_annotate_region_begin(const char* name) __attribute__((weak));
void strata_annotate_region_end(const char* name) __attribute__((weak));
void strata_annotate_monitor_dump(void) __attribute__((weak));
/* For language bindings (the Fortran module): the call site is given rather than taken. */
void strata_annotate_region_begin_at(const char* name, const void* call_site) __attribute__((weak));
void strata_annotate_region_end_at(const char* name, const void* call_site) __attribute__((weak));

static inline __attribute__((always_inline)) void strata_region_begin(const char* name) {
  if (strata_annotate_region_begin) {
    strata_annotate_region_begin(name);
  }
}

static inline __attribute__((always_inline)) void strata_region_end(const char* name) {
  if (strata_annotate_region_end) {
    strata_annotate_region_end(name);
  }
}

/* Asks the monitor module (if loaded) to offload this rank's profile now, as one round. */
static inline __attribute__((always_inline)) void strata_monitor_dump(void) {
  if (strata_annotate_monitor_dump) {
    strata_annotate_monitor_dump();
  }
}

#ifdef __cplusplus
} /* extern "C" */

namespace strata {

/* A region that lasts as long as the scope holding it. `name` must outlive the scope (a literal).
 */
class ScopedRegion {
public:
  /* Always inlined, even without optimisation: the region's call site is the scope's line. */
  __attribute__((always_inline)) explicit ScopedRegion(const char* name) noexcept : name_(name) {
    strata_region_begin(name_);
  }
  __attribute__((always_inline)) ~ScopedRegion() { strata_region_end(name_); }
  ScopedRegion(const ScopedRegion&) = delete;
  ScopedRegion& operator=(const ScopedRegion&) = delete;

private:
  const char* name_;
};

} // namespace strata

#define STRATA_REGION_CONCAT_(a, b) a##b
#define STRATA_REGION_NAME_(line) STRATA_REGION_CONCAT_(strata_region_scope_, line)
#define STRATA_REGION(name) ::strata::ScopedRegion STRATA_REGION_NAME_(__LINE__)(name)
/* The enclosing function's name, qualified as the compiler prints it. */
#define STRATA_FUNCTION() STRATA_REGION(__PRETTY_FUNCTION__)

#endif /* __cplusplus */

#endif /* STRATA_ANNOTATE_H */
