// libFuzzer target: the site store's text of a set of MPI control variables (written and read
// back by the store, site/mpi_t_settings.hpp) never crashes, and whatever it reads writes back
// to a text that reads as the same settings in name order, none holding a separator.
#include "site/mpi_t_settings.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

namespace {

bool by_content(const strata::site::setting& a, const strata::site::setting& b) {
  return std::tie(a.name, a.value, a.from_environment) <
         std::tie(b.name, b.value, b.from_environment);
}

bool holds_separator(const std::string& text) {
  return text.find_first_of("\x1e\x1f") != std::string::npos;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::site;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<setting> read = settings_of_text(text);
  for (const setting& s : read)
    if (holds_separator(s.name) || holds_separator(s.value))
      std::abort();
  std::vector<setting> again = settings_of_text(settings_text(read));
  if (!std::is_sorted(again.begin(), again.end(),
                      [](const setting& a, const setting& b) { return a.name < b.name; }))
    std::abort();
  std::sort(read.begin(), read.end(), by_content);
  std::sort(again.begin(), again.end(), by_content);
  if (read != again)
    std::abort();
  std::vector<setting> raw;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    std::string line = text.substr(at, end - at);
    at = end + 1;
    const bool from_environment = !line.empty() && line[0] == '!';
    const size_t equals = line.find('=');
    raw.push_back({line.substr(from_environment ? 1 : 0, equals),
                   equals == std::string::npos ? std::string() : line.substr(equals + 1),
                   from_environment});
  }
  // A set's names are distinct (settings_text's order of a repeated name is not defined).
  std::stable_sort(raw.begin(), raw.end(),
                   [](const setting& a, const setting& b) { return a.name < b.name; });
  raw.erase(std::unique(raw.begin(), raw.end(),
                        [](const setting& a, const setting& b) { return a.name == b.name; }),
            raw.end());
  std::string lines = "x";
  append_setting_lines(lines, [&](auto line) {
    for (const setting& s : raw)
      line(s.name, s.value, s.from_environment);
  });
  if (lines != "x" + settings_text(raw))
    std::abort();
  return 0;
}
