#include "common/symbols.hpp"

#include "python_sites/lookup.hpp"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace strata::common {

namespace {

bool ends_with(const char* text, const char* suffix) {
  const size_t n = std::strlen(text);
  const size_t k = std::strlen(suffix);
  return n >= k && std::strcmp(text + n - k, suffix) == 0;
}

// Walks out of inlined code from `inlined_from`: the innermost inlined scopes at `at` whose code
// lies in that file give way to the place they were called from.
void leave_inlined(Dwfl_Module* module, Dwarf_Addr at, const char* inlined_from,
                   source_location& place) {
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(module, at, &bias);
  if (cu == nullptr)
    return;
  Dwarf_Die* scopes = nullptr;
  int n = dwarf_getscopes(cu, at - bias, &scopes);
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  if (n <= 0 || dwarf_getsrcfiles(cu, &files, &file_count) != 0) {
    std::free(scopes);
    return;
  }
  int i = 0;
  while (i < n && ends_with(place.file.c_str(), inlined_from)) {
    if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) {
      ++i;
      continue;
    }
    Dwarf_Attribute attr;
    Dwarf_Word file = 0;
    Dwarf_Word line = 0;
    if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attr), &file) != 0 ||
        dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &line) != 0 ||
        file >= file_count)
      break;
    const char* name = dwarf_filesrc(files, file, nullptr, nullptr);
    if (name == nullptr)
      break;
    place.file = name;
    place.line = static_cast<int>(line);
    // dwarf_getscopes follows an inlined instance into its abstract origin; the code it was
    // inlined into is found from the instance itself (which comes first in the new list).
    Dwarf_Die* outer = nullptr;
    const int m = dwarf_getscopes_die(&scopes[i], &outer);
    std::free(scopes);
    scopes = outer;
    n = m;
    i = 1;
  }
  std::free(scopes);
}

} // namespace

std::vector<source_location> resolve_return_addresses(const std::vector<uint64_t>& addresses,
                                                      const char* inlined_from) {
  std::vector<source_location> out(addresses.size());
  static char* debuginfo_path = nullptr;
  const Dwfl_Callbacks callbacks = {dwfl_linux_proc_find_elf, dwfl_standard_find_debuginfo, nullptr,
                                    &debuginfo_path};
  Dwfl* dwfl = dwfl_begin(&callbacks);
  if (dwfl == nullptr)
    return out;
  if (dwfl_linux_proc_report(dwfl, ::getpid()) != 0 ||
      dwfl_report_end(dwfl, nullptr, nullptr) != 0) {
    dwfl_end(dwfl);
    return out;
  }
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (addresses[i] == 0)
      continue;
    // A Python call site the core took (src/python_sites): the script's file, line, function.
    if (python_sites::describe_key(addresses[i], out[i].file, out[i].line, out[i].function))
      continue;
    const Dwarf_Addr at = addresses[i] - 1; // inside the call instruction, not after it
    Dwfl_Module* module = dwfl_addrmodule(dwfl, at);
    if (module == nullptr)
      continue;
    if (const char* name = dwfl_module_addrname(module, at))
      out[i].function = name;
    if (Dwfl_Line* line = dwfl_module_getsrc(module, at)) {
      int lineno = 0;
      if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
        out[i].file = file;
        out[i].line = lineno;
        if (inlined_from != nullptr && ends_with(file, inlined_from))
          leave_inlined(module, at, inlined_from, out[i]);
        continue;
      }
    }
    // No line information: the module and the offset still name the place.
    Dwarf_Addr base = 0;
    const char* module_name =
        dwfl_module_info(module, nullptr, &base, nullptr, nullptr, nullptr, nullptr, nullptr);
    char offset[32];
    std::snprintf(offset, sizeof(offset), "+0x%llx", static_cast<unsigned long long>(at - base));
    out[i].file = std::string(module_name != nullptr ? module_name : "?") + offset;
  }
  dwfl_end(dwfl);
  return out;
}

} // namespace strata::common
