// Python call sites for the core: when MPI is called from a Python extension module (mpi4py) in
// a process running CPython, the call site is the innermost Python frame's place ("app.py:42 in
// solve") instead of an address in the extension. The core captures a key where it reads a
// call site (call_site below); the one call-site resolver (src/common/symbols.cpp, through
// lookup.hpp) turns keys into file, line and function.
//
// A key is the address of one entry of a table of distinct sites (code object and instruction),
// each resolved to text once, the first time it is seen, while its code object is certainly
// alive (MPI_Finalize may run after the interpreter has gone).
#pragma once

#include <cstdint>

namespace strata::python_sites {

// Set by start() when an interpreter runs in this process: until then, and in every program
// that is not Python, the core pays one load and one branch per event (start_event).
extern bool enabled __attribute__((visibility("hidden")));

// At MPI_Init (before its call site is taken): finds the interpreter and the extension modules,
// and compares the frame layout with the public C API while the GIL is held. STRATA_PYTHON_SITES
// ("0": off, "public": the public C API only) is read here.
void start();

// The Python site of a call whose return address lies in an extension module, else the return
// address itself (also when the frames cannot be read: the address still names the place).
const void* python_call_site(const void* return_address);

// What call_site calls: python_call_site, or once the frame layout agreed with the public API
// the known version's own capture, which gives a thread's last site again in a few loads when
// its call comes from the same return address and Python instruction as its last one (a loop),
// and asks python_call_site otherwise.
using site_capture = const void* (*)(const void* return_address);
extern site_capture capture_site __attribute__((visibility("hidden")));

__attribute__((always_inline)) inline const void* call_site(const void* return_address) {
  if (__builtin_expect(!enabled, 1))
    return return_address;
  return __atomic_load_n(&capture_site, __ATOMIC_RELAXED)(return_address);
}

// The site of the Python frame `skip` frames out from the innermost one (the annotation package
// skips its own), or nullptr when there is none or it cannot be read.
const void* current_site(int skip);

} // namespace strata::python_sites
