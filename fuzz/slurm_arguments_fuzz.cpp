// libFuzzer target: the SPANK plugin's own arguments (plugstack.conf's words after the plugin's
// path, split on spaces as Slurm splits them) must never crash, and what they give must be
// consistent: a default only when its stack parses, a message for every word not taken.
#include "slurm/task_setup.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> words;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find(' ', at), text.size());
    if (end > at)
      words.emplace_back(text.substr(at, end - at));
    at = end + 1;
  }
  const strata::slurm::plugin_arguments args = strata::slurm::parse_plugin_arguments(words);
  std::size_t taken = 0;
  for (const std::string& w : words)
    if (w.rfind("default=", 0) == 0 || w.rfind("prefix=", 0) == 0)
      ++taken;
  if (args.errors.size() < words.size() - taken)
    std::abort(); // a word neither default= nor prefix= went unreported
  if (!args.default_stack.empty() && !strata::slurm::stack_problem(args.default_stack).empty())
    std::abort(); // a default kept whose stack does not parse
  return 0;
}
