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
  return 0;
}
