// Regions of Python programs (the `strata` package, python/strata): the same regions as
// include/strata/annotate.h's, with the Python line that entered them as their call site.
//
// The package asks once per region name for two built-in functions of the interpreter's own
// kind, bound to the name (strata_python_region_calls): calling them costs what any built-in
// costs (a ctypes call costs several times more). They are made with the interpreter's C API
// found by dlsym, as python_sites reads frames: no link against libpython, no Python headers
// (PyMethodDef and the METH_ flags are the stable ABI's). The ctypes entry points below remain
// for an interpreter whose C API the core cannot reach.
#include "core/dispatch.hpp"
#include "core/regions.hpp"

#include <dlfcn.h>
#include <sys/types.h>

#include <strata/annotate.h>

namespace {

// Nobody listening: not even the frames are read. `skip` Python frames are left out: the
// package's own (a decorated function's wrapper), none for a `with` block, whose built-ins
// the interpreter calls straight from the block's frame.
const void* python_caller(int skip) {
  if (strata::core::region_listener_count.load(std::memory_order_acquire) == 0)
    return nullptr;
  return strata::python_sites::current_site(skip);
}

// PyMethodDef as the stable ABI fixes it, and the calling conventions used here.
struct method_def {
  const char* name;
  void* function;
  int flags;
  const char* doc;
};
constexpr int meth_noargs = 0x0004;
constexpr int meth_fastcall = 0x0080;

struct python_api {
  void* (*new_function)(method_def*, void*, void*) = nullptr; // PyCFunction_NewEx
  void* (*pack)(ssize_t, ...) = nullptr;                      // PyTuple_Pack
  char* (*bytes_text)(void*) = nullptr;                       // PyBytes_AsString
  void (*incref)(void*) = nullptr;                            // Py_IncRef
  void (*decref)(void*) = nullptr;                            // Py_DecRef
  void (*clear_error)() = nullptr;                            // PyErr_Clear
  void* none = nullptr;                                       // &_Py_NoneStruct
};

python_api api;

template <typename F> bool find(F& out, const char* name) {
  out = reinterpret_cast<F>(::dlsym(RTLD_DEFAULT, name));
  return out != nullptr;
}

bool find_api() {
  if (api.none != nullptr)
    return true;
  python_api a;
  a.none = ::dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
  if (!find(a.new_function, "PyCFunction_NewEx") || !find(a.pack, "PyTuple_Pack") ||
      !find(a.bytes_text, "PyBytes_AsString") || !find(a.incref, "Py_IncRef") ||
      !find(a.decref, "Py_DecRef") || !find(a.clear_error, "PyErr_Clear") || a.none == nullptr)
    return false;
  api = a;
  return true;
}

enum class edge { begin, end };

// One edge of the region named by `self` (the name as a bytes object, which the built-in keeps
// alive). Returns None, as __enter__ and __exit__ may.
template <edge E, int Skip> void* region_edge(void* self) {
  if (strata::core::region_listener_count.load(std::memory_order_relaxed) != 0) {
    const char* name = api.bytes_text(self);
    const void* site = python_caller(Skip);
    if (E == edge::begin)
      strata_annotate_region_begin_at(name, site);
    else
      strata_annotate_region_end_at(name, site);
  }
  api.incref(api.none);
  return api.none;
}

template <edge E, int Skip> void* region_edge_noargs(void* self, void* /*none*/) {
  return region_edge<E, Skip>(self);
}

// __exit__ is given the exception's type, value and traceback: looked at by nobody.
template <edge E, int Skip>
void* region_edge_fastcall(void* self, void* const* /*args*/, ssize_t /*count*/) {
  return region_edge<E, Skip>(self);
}

method_def with_enter{"region_enter", reinterpret_cast<void*>(&region_edge_noargs<edge::begin, 0>),
                      meth_noargs, nullptr};
method_def with_exit{"region_exit", reinterpret_cast<void*>(&region_edge_fastcall<edge::end, 0>),
                     meth_fastcall, nullptr};
method_def function_enter{"function_enter",
                          reinterpret_cast<void*>(&region_edge_noargs<edge::begin, 1>), meth_noargs,
                          nullptr};
method_def function_exit{"function_exit",
                         reinterpret_cast<void*>(&region_edge_noargs<edge::end, 1>), meth_noargs,
                         nullptr};

} // namespace

// (enter, leave) for the region named `name` (a bytes object), a new tuple of two built-ins
// bound to it; `in_function`: they are called from the package's wrapper of a decorated
// function (its caller is the site) rather than by a `with` statement (the block is). nullptr
// (ctypes raises ValueError) when the C API is out of reach or `name` is no bytes object.
// The package calls this through ctypes.PyDLL: the GIL is held.
extern "C" STRATA_EXPORT void* strata_python_region_calls(void* name, int in_function) {
  if (name == nullptr || !find_api())
    return nullptr;
  if (api.bytes_text(name) == nullptr) {
    api.clear_error();
    return nullptr;
  }
  void* enter = api.new_function(in_function != 0 ? &function_enter : &with_enter, name, nullptr);
  void* leave = api.new_function(in_function != 0 ? &function_exit : &with_exit, name, nullptr);
  void* pair = enter != nullptr && leave != nullptr ? api.pack(2, enter, leave) : nullptr;
  for (void* made : {enter, leave})
    if (made != nullptr)
      api.decref(made);
  if (pair == nullptr)
    api.clear_error();
  return pair;
}

// The same through ctypes, one frame (the package's) left out.
extern "C" STRATA_EXPORT void strata_python_region_begin(const char* name) {
  strata_annotate_region_begin_at(name, python_caller(1));
}

extern "C" STRATA_EXPORT void strata_python_region_end(const char* name) {
  strata_annotate_region_end_at(name, python_caller(1));
}
