#include "common/on_demand_library.hpp"

#include <dlfcn.h>

namespace strata::common {

on_demand_library::on_demand_library(const char* soname) : soname_(soname) {
  handle_ = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* why = ::dlerror();
    load_error_ = why != nullptr ? why : "unknown error";
  }
}

void* on_demand_library::symbol(const char* name) {
  void* address = handle_ != nullptr ? ::dlsym(handle_, name) : nullptr;
  if (address == nullptr && handle_ != nullptr && missing_.empty())
    missing_ = name;
  return address;
}

std::string on_demand_library::problem() const {
  if (handle_ == nullptr)
    return "cannot load " + soname_ + " (" + load_error_ + ")";
  if (!missing_.empty())
    return soname_ + " has no " + missing_;
  return "";
}

} // namespace strata::common
