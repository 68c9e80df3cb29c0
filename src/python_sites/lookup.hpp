// The resolver's side of Python call sites (capture.hpp): the core that made a key turns it
// into the script's file, line and function (libstrata exports strata_python_call_site, found
// here with dlsym, so that the resolver needs no link against the core). Where no core is in
// the process, or the key is an ordinary return address, this says no.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <string>

extern "C" {
// 1 when `key` is a Python call site of this process, with its text (kept for the process's
// life); 0 otherwise.
typedef int (*strata_python_call_site_fn)(uint64_t key, const char** file, int* line,
                                          const char** function);
}

namespace strata::python_sites {

inline bool describe_key(uint64_t key, std::string& file, int& line, std::string& function) {
  static const auto lookup = reinterpret_cast<strata_python_call_site_fn>(
      ::dlsym(RTLD_DEFAULT, "strata_python_call_site"));
  const char* f = nullptr;
  const char* fn = nullptr;
  int l = 0;
  if (lookup == nullptr || lookup(key, &f, &l, &fn) == 0)
    return false;
  file = f != nullptr ? f : "";
  line = l;
  function = fn != nullptr ? fn : "";
  return true;
}

} // namespace strata::python_sites
