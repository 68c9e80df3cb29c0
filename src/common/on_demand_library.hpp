// A shared library loaded (dlopen) when first needed instead of linked: what only some jobs use
// (PAPI for counters, libdw for call sites) then costs nothing to the start of the others. The
// library stays loaded until the process exits.
#pragma once

#include <string>

namespace strata::common {

class on_demand_library {
public:
  // Loads `soname` (the name the loader knows it by, e.g. "libdw.so.1").
  explicit on_demand_library(const char* soname);

  // Sets `fn` to the library's function `name`, or to nullptr (then ok() is false).
  template <typename Fn> void bind(const char* name, Fn& fn) {
    fn = reinterpret_cast<Fn>(symbol(name));
  }

  bool ok() const { return handle_ != nullptr && missing_.empty(); }
  // Why not ok(): "cannot load SONAME (reason)" or "SONAME has no NAME".
  std::string problem() const;

private:
  void* symbol(const char* name);

  std::string soname_;
  void* handle_ = nullptr;
  std::string load_error_;
  std::string missing_; // the first function not found
};

} // namespace strata::common
