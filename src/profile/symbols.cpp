#include "profile/symbols.hpp"

#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cstdio>

namespace strata::profile {

std::vector<source_location> resolve_return_addresses(const std::vector<uint64_t>& addresses) {
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

} // namespace strata::profile
