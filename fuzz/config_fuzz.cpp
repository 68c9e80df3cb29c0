// libFuzzer target: the tool-list and config-file parsers must never crash, and an accepted
// stack must only hold well-formed names.
#include "config/config.hpp"

#include <cstdint>
#include <cstdlib>
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
  return 0;
}
