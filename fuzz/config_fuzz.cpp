// libFuzzer target: the tool-list and config-file parsers and the option values' parsers must
// never crash, an accepted stack must only hold well-formed names, and a resolved option must
// pass its type's check.
#include "config/config.hpp"
#include "config/option_binder.hpp"
#include "config/options.hpp"

#include <strata/module.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

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
  // The binder a module reads its values with: any text into each type, one line or none, and
  // a field taken only within its range.
  std::uint64_t n = 0, bytes = 0;
  bool on = false;
  std::string name, names, choice;
  std::vector<std::string> list;
  double start = 0, stop = -1, wait = 0;
  int level = 0;
  std::map<std::string, std::string> passed;
  c::option_binder bound;
  bound.add_uint("n", n, "1", "", 1, 1000)
      .add_bool("on", on, "0", "")
      .add_string("name", name, nullptr, "")
      .not_empty()
      .add_list("names", names, nullptr, "")
      .add_list("list", list, nullptr, "")
      .add_duration("start", start, "0", "")
      .add_duration("stop", stop, nullptr, "")
      .add_duration("wait", wait, "1", "", 60)
      .add_size("bytes", bytes, "16M", "", 1, 1ull << 40)
      .add_enum("choice", choice, "a", "", {"a", "b"})
      .add_int("level", level, "5", "", -100, 100)
      .add_passed_on("bins", "uint", passed, "")
      .require_more("stop", "start", "later than");
  const std::string value(text);
  for (const char* key : {"n", "on", "name", "names", "list", "start", "stop", "wait", "bytes",
                          "choice", "level", "bins"}) {
    const strata_module_arg arg{key, value.c_str()};
    const std::string problem = bound.take(&arg, 1);
    if (problem.find('\n') != std::string::npos && value.find('\n') == std::string::npos)
      std::abort();
  }
  // Two values at once: the check between them holds whenever both are taken.
  const std::size_t half = value.size() / 2;
  if (bound.take({{"start", value.substr(0, half)}, {"stop", value.substr(half)}}).empty() &&
      !(stop > start))
    std::abort();
  if (n < 1 || n > 1000 || bytes < 1 || bytes > (1ull << 40) || wait < 0 || wait > 60 ||
      level < -100 || level > 100 || (choice != "a" && choice != "b"))
    std::abort();
  for (const std::string& item : list)
    if (item.empty() || item.find_first_of(",+") != std::string::npos)
      std::abort();
  return 0;
}
