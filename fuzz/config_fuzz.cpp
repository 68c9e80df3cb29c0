// libFuzzer target: the tool-list and config-file parsers and the option values' parsers must
// never crash, an accepted stack must only hold well-formed names, and a resolved option must
// pass its type's check.
#include "config/config.hpp"
#include "config/option_binder.hpp"
#include "config/options.hpp"

#include <strata/module.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto& stack : {strata::config::parse_config(text, "fuzz.conf"),
                            strata::config::parse_tool_list(text, "--tools")}) {
    if (stack.ok())
      for (const auto& m : stack.modules)
        if (m.name.empty())
          std::abort();
  }
  namespace c = strata::config;
  c::parse_int(text);
  c::parse_uint(text);
  c::parse_double(text);
  c::parse_bool(text);
  c::parse_size(text);
  c::parse_duration(text);
  const std::vector<c::option_decl> declared = {{"n", "uint", "1", "", {}},
                                                {"size", "size", {}, "", {}},
                                                {"t", "duration", {}, "", {}},
                                                {"mode", "enum:a|b", "a", "", {}}};
  const auto env = [&](const char*) -> const char* { return nullptr; };
  const auto resolved = c::resolve_options(
      "fuzz", declared, {{"size", std::string(text)}, {"t", std::string(text)}}, env);
  for (const auto& [key, value] : resolved.values)
    for (const c::option_decl& d : declared)
      if (d.key == key && !c::type_problem(d.type, value).empty())
        std::abort();
  // The binder a module reads its values with: any text into each type, one line or none.
  std::uint64_t n = 0;
  bool on = false;
  std::string name, names;
  c::option_binder bound;
  bound.add_uint("n", n, "1", "", 1, 1000)
      .add_bool("on", on, "0", "")
      .add_string("name", name, nullptr, "")
      .add_list("names", names, nullptr, "");
  const std::string value(text);
  for (const char* key : {"n", "on", "name", "names"}) {
    const strata_module_arg arg{key, value.c_str()};
    const std::string problem = bound.take(&arg, 1);
    if (problem.find('\n') != std::string::npos && value.find('\n') == std::string::npos)
      std::abort();
  }
  if (n > 1000)
    std::abort();
  return 0;
}
