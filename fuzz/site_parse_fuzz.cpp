// libFuzzer target: the site's hand-written parsers (store URLs, --since durations, record
// timestamps) never crash, say why they refuse, and a timestamp they accept prints back the same.
#include "site/parse.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::site;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const url_result url = parse_db_url(text);
  if (url.url.has_value() == !url.error.empty())
    std::abort();
  if (url.url && url.url->target.empty())
    std::abort();
  const duration_result d = parse_duration(text);
  if (d.seconds.has_value() == !d.error.empty())
    std::abort();
  if (d.seconds && *d.seconds <= 0)
    std::abort();
  if (const auto t = parse_utc_time(text)) {
    const bool full = text.size() == 20;
    if (full && text.substr(17, 2) != "60" && format_utc_time(*t) != text)
      std::abort();
    if (!full && format_utc_time(*t, true) != text)
      std::abort();
  }
  return 0;
}
