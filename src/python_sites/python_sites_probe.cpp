// The Python call sites without MPI, for python_sites_test.py: the test's Python code calls
// these through ctypes (CDLL: the GIL released around the call, as mpi4py does around blocking
// calls; PyDLL: the GIL kept), so each capture reads the frames of a real interpreter.
#include "python_sites/capture.hpp"
#include "python_sites/cpython.hpp"
#include "python_sites/extensions.hpp"
#include "python_sites/lookup.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include <cstdio>
#include <string>

namespace {

namespace ps = strata::python_sites;

// "file:line in function" for a Python site, "" for anything else.
int describe(const void* key, char* out, int size) {
  std::string file;
  std::string function;
  int line = 0;
  if (key == nullptr || !ps::describe_key(reinterpret_cast<uintptr_t>(key), file, line, function)) {
    if (size > 0)
      out[0] = '\0';
    return 0;
  }
  std::snprintf(out, static_cast<size_t>(size), "%s:%d in %s", file.c_str(), line,
                function.c_str());
  return 1;
}

const void* exit_address = nullptr;

// After Py_Finalize (as mpi4py's MPI_Finalize runs, from Py_AtExit): no frames to read.
void at_python_exit() {
  const void* key = ps::python_call_site(exit_address);
  std::printf("after exit: %s %s\n", key == exit_address ? "address" : "site",
              ps::current_site(0) == nullptr ? "none" : "site");
  std::fflush(stdout);
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) int probe_start() {
  ps::start();
  return static_cast<int>(ps::current_access());
}

__attribute__((visibility("default"))) int probe_reads_runtime_fields() {
  return ps::reads_runtime_fields() ? 1 : 0;
}

__attribute__((visibility("default"))) int probe_site(int skip, char* out, int size) {
  return describe(ps::current_site(skip), out, size);
}

// The key of the innermost Python frame's site, whatever the argument (for sorted's key=).
__attribute__((visibility("default"))) uint64_t probe_key(long /*item*/) {
  return reinterpret_cast<uintptr_t>(ps::current_site(0));
}

// As the core does for a call that returns to `return_address` (call_site: the known layout's
// capture once the layout agreed): 1 and the site's text when it became a Python site, 0 when
// the address was kept.
__attribute__((visibility("default"))) int probe_call_site(const void* return_address, char* out,
                                                           int size) {
  const void* key = ps::call_site(return_address);
  return key == return_address ? 0 : describe(key, out, size);
}

// 1 when call_site takes the known layout's capture (its fast path for a repeated place).
__attribute__((visibility("default"))) int probe_known_layout_capture() {
  return ps::capture_site != &ps::python_call_site ? 1 : 0;
}

// 1 when this thread's state is watched (the fast path reads it from the thread's last call).
__attribute__((visibility("default"))) int probe_thread_state_watched() {
  return ps::thread_state_watched() ? 1 : 0;
}

// Calls `callback` `times` times from a thread of its own that Python did not start, as a C
// library's worker would: each call takes and releases a thread state of its own (ctypes'
// callbacks use PyGILState_Ensure and PyGILState_Release). 1 when the thread ran and ended
// within a minute (a hang is a failure, not a stuck test; the job is then left to the thread).
__attribute__((visibility("default"))) int probe_foreign_thread(void (*callback)(), int times) {
  struct job {
    void (*callback)();
    int times;
  };
  auto* work = new job{callback, times};
  pthread_t thread;
  auto run = [](void* argument) -> void* {
    const auto* w = static_cast<const job*>(argument);
    for (int i = 0; i < w->times; ++i)
      w->callback();
    return nullptr;
  };
  if (pthread_create(&thread, nullptr, run, work) != 0) {
    delete work;
    return 0;
  }
  timespec deadline{};
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 60;
  if (pthread_timedjoin_np(thread, nullptr, &deadline) != 0)
    return 0;
  delete work;
  return 1;
}

// Says it entered (*entered = 1), then waits until *go is not 0: a thread inside a call from
// Python that released the GIL (CDLL), as one blocked in MPI is, for probe_other_thread_site.
__attribute__((visibility("default"))) void probe_wait_for(int* entered, const int* go) {
  __atomic_store_n(entered, 1, __ATOMIC_RELEASE);
  while (__atomic_load_n(go, __ATOMIC_ACQUIRE) == 0) {
    timespec pause{0, 1'000'000};
    nanosleep(&pause, nullptr);
  }
}

// The site of the innermost Python frame of another thread, found by its OS thread id, as the
// hang diagnosis reads it: "file:line in function", or "" and 0 when there is none.
__attribute__((visibility("default"))) int probe_other_thread_site(int64_t os_thread, char* out,
                                                                   int size) {
  ps::place_text text;
  if (!ps::other_thread_site(os_thread, text)) {
    if (size > 0)
      out[0] = '\0';
    return 0;
  }
  std::snprintf(out, static_cast<size_t>(size), "%s:%d in %s", text.file.c_str(), text.line,
                text.function.c_str());
  return 1;
}

__attribute__((visibility("default"))) int probe_other_threads_readable() {
  return ps::other_threads_readable() ? 1 : 0;
}

__attribute__((visibility("default"))) int probe_in_extension(const void* address) {
  return ps::in_extension_module(reinterpret_cast<uintptr_t>(address)) ? 1 : 0;
}

// Registers a check that runs after the interpreter has finalized, with an address in an
// extension module as the call's return address.
__attribute__((visibility("default"))) int probe_check_after_exit(const void* in_extension) {
  exit_address = in_extension;
  using at_exit_fn = int (*)(void (*)());
  auto py_at_exit = reinterpret_cast<at_exit_fn>(::dlsym(RTLD_DEFAULT, "Py_AtExit"));
  return py_at_exit != nullptr && py_at_exit(at_python_exit) == 0 ? 1 : 0;
}

} // extern "C"
