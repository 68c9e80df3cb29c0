#include "common/symbols.hpp"

#include "common/on_demand_library.hpp"
#include "python_sites/lookup.hpp"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace strata::common {

namespace {

// libdw's functions, from the library loaded at the first resolution (CMakeLists.txt): linked,
// libdw and its compression libraries took 0.2 ms of the start of every rank that loads a
// module with call sites, whether it asked for call sites or not.
struct libdw_functions {
  decltype(&dwfl_begin) begin = nullptr;
  decltype(&dwfl_end) end = nullptr;
  decltype(&dwfl_linux_proc_report) linux_proc_report = nullptr;
  decltype(&dwfl_linux_proc_find_elf) linux_proc_find_elf = nullptr;
  decltype(&dwfl_standard_find_debuginfo) standard_find_debuginfo = nullptr;
  decltype(&dwfl_report_end) report_end = nullptr;
  decltype(&dwfl_addrmodule) addrmodule = nullptr;
  decltype(&dwfl_module_addrname) module_addrname = nullptr;
  decltype(&dwfl_module_getsrc) module_getsrc = nullptr;
  decltype(&dwfl_lineinfo) lineinfo = nullptr;
  decltype(&dwfl_module_info) module_info = nullptr;
  decltype(&dwfl_module_addrdie) module_addrdie = nullptr;
  decltype(&dwarf_getscopes) getscopes = nullptr;
  decltype(&dwarf_getscopes_die) getscopes_die = nullptr;
  decltype(&dwarf_getsrcfiles) getsrcfiles = nullptr;
  decltype(&dwarf_filesrc) filesrc = nullptr;
  decltype(&dwarf_tag) tag = nullptr;
  decltype(&dwarf_attr) attr = nullptr;
  decltype(&dwarf_formudata) formudata = nullptr;
};

// nullptr when libdw cannot be loaded (then no address is resolved).
const libdw_functions* libdw() {
  static const libdw_functions* const loaded = []() -> const libdw_functions* {
    on_demand_library library(STRATA_LIBDW_SONAME);
    static libdw_functions f;
    library.bind("dwfl_begin", f.begin);
    library.bind("dwfl_end", f.end);
    library.bind("dwfl_linux_proc_report", f.linux_proc_report);
    library.bind("dwfl_linux_proc_find_elf", f.linux_proc_find_elf);
    library.bind("dwfl_standard_find_debuginfo", f.standard_find_debuginfo);
    library.bind("dwfl_report_end", f.report_end);
    library.bind("dwfl_addrmodule", f.addrmodule);
    library.bind("dwfl_module_addrname", f.module_addrname);
    library.bind("dwfl_module_getsrc", f.module_getsrc);
    library.bind("dwfl_lineinfo", f.lineinfo);
    library.bind("dwfl_module_info", f.module_info);
    library.bind("dwfl_module_addrdie", f.module_addrdie);
    library.bind("dwarf_getscopes", f.getscopes);
    library.bind("dwarf_getscopes_die", f.getscopes_die);
    library.bind("dwarf_getsrcfiles", f.getsrcfiles);
    library.bind("dwarf_filesrc", f.filesrc);
    library.bind("dwarf_tag", f.tag);
    library.bind("dwarf_attr", f.attr);
    library.bind("dwarf_formudata", f.formudata);
    if (library.ok())
      return &f;
    std::fprintf(stderr, "strata: call sites are not resolved: %s\n", library.problem().c_str());
    return nullptr;
  }();
  return loaded;
}

bool ends_with(const char* text, const char* suffix) {
  const size_t n = std::strlen(text);
  const size_t k = std::strlen(suffix);
  return n >= k && std::strcmp(text + n - k, suffix) == 0;
}

// Walks out of inlined code from `inlined_from`: the innermost inlined scopes at `at` whose code
// lies in that file give way to the place they were called from.
void leave_inlined(const libdw_functions& dw, Dwfl_Module* module, Dwarf_Addr at,
                   const char* inlined_from, source_location& place) {
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dw.module_addrdie(module, at, &bias);
  if (cu == nullptr)
    return;
  Dwarf_Die* scopes = nullptr;
  int n = dw.getscopes(cu, at - bias, &scopes);
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  if (n <= 0 || dw.getsrcfiles(cu, &files, &file_count) != 0) {
    std::free(scopes);
    return;
  }
  int i = 0;
  while (i < n && ends_with(place.file.c_str(), inlined_from)) {
    if (dw.tag(&scopes[i]) != DW_TAG_inlined_subroutine) {
      ++i;
      continue;
    }
    Dwarf_Attribute attr;
    Dwarf_Word file = 0;
    Dwarf_Word line = 0;
    if (dw.formudata(dw.attr(&scopes[i], DW_AT_call_file, &attr), &file) != 0 ||
        dw.formudata(dw.attr(&scopes[i], DW_AT_call_line, &attr), &line) != 0 || file >= file_count)
      break;
    const char* name = dw.filesrc(files, file, nullptr, nullptr);
    if (name == nullptr)
      break;
    place.file = name;
    place.line = static_cast<int>(line);
    // dwarf_getscopes follows an inlined instance into its abstract origin; the code it was
    // inlined into is found from the instance itself (which comes first in the new list).
    Dwarf_Die* outer = nullptr;
    const int m = dw.getscopes_die(&scopes[i], &outer);
    std::free(scopes);
    scopes = outer;
    n = m;
    i = 1;
  }
  std::free(scopes);
}

// A C++ function's name as its source writes it (ns::solver::step(int)); others as they are.
std::string readable_function(const char* name) {
  if (name[0] != '_' || name[1] != 'Z')
    return name;
  int status = -1;
  char* plain = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string result = status == 0 && plain != nullptr ? plain : name;
  std::free(plain);
  return result;
}

} // namespace

std::vector<source_location> resolve_return_addresses(const std::vector<uint64_t>& addresses,
                                                      const char* inlined_from) {
  std::vector<source_location> out(addresses.size());
  const libdw_functions* const loaded = libdw();
  if (loaded == nullptr)
    return out;
  const libdw_functions& dw = *loaded;
  static char* debuginfo_path = nullptr;
  const Dwfl_Callbacks callbacks = {dw.linux_proc_find_elf, dw.standard_find_debuginfo, nullptr,
                                    &debuginfo_path};
  Dwfl* dwfl = dw.begin(&callbacks);
  if (dwfl == nullptr)
    return out;
  if (dw.linux_proc_report(dwfl, ::getpid()) != 0 || dw.report_end(dwfl, nullptr, nullptr) != 0) {
    dw.end(dwfl);
    return out;
  }
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (addresses[i] == 0)
      continue;
    // A Python call site the core took (src/python_sites): the script's file, line, function.
    if (python_sites::describe_key(addresses[i], out[i].file, out[i].line, out[i].function))
      continue;
    const Dwarf_Addr at = addresses[i] - 1; // inside the call instruction, not after it
    Dwfl_Module* module = dw.addrmodule(dwfl, at);
    if (module == nullptr)
      continue;
    if (const char* name = dw.module_addrname(module, at))
      out[i].function = readable_function(name);
    if (Dwfl_Line* line = dw.module_getsrc(module, at)) {
      int lineno = 0;
      if (const char* file = dw.lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
        out[i].file = file;
        out[i].line = lineno;
        if (inlined_from != nullptr && ends_with(file, inlined_from))
          leave_inlined(dw, module, at, inlined_from, out[i]);
        continue;
      }
    }
    // No line information: the module and the offset still name the place.
    Dwarf_Addr base = 0;
    const char* module_name =
        dw.module_info(module, nullptr, &base, nullptr, nullptr, nullptr, nullptr, nullptr);
    char offset[32];
    std::snprintf(offset, sizeof(offset), "+0x%llx", static_cast<unsigned long long>(at - base));
    out[i].file = std::string(module_name != nullptr ? module_name : "?") + offset;
  }
  dw.end(dwfl);
  return out;
}

} // namespace strata::common
