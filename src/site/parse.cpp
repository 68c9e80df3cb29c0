#include "site/parse.hpp"

#include <charconv>
#include <cstdio>
#include <ctime>

namespace strata::site {

url_result parse_db_url(std::string_view text) {
  constexpr std::string_view sqlite_prefix = "sqlite:";
  if (text.starts_with(sqlite_prefix)) {
    std::string_view path = text.substr(sqlite_prefix.size());
    if (path.starts_with("//"))
      path.remove_prefix(2);
    if (path.empty())
      return {{}, "store URL \"sqlite:\" names no file (sqlite:PATH)"};
    if (path.find('\0') != std::string_view::npos)
      return {{}, "store URL has a NUL byte in its path"};
    return {db_url{backend::sqlite, std::string(path)}, {}};
  }
  if (text.starts_with("postgresql://") || text.starts_with("postgres://")) {
    if (text.find('\0') != std::string_view::npos)
      return {{}, "store URL has a NUL byte"};
    return {db_url{backend::postgresql, std::string(text)}, {}};
  }
  std::string shown(text.substr(0, 80));
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = '?';
  return {{},
          "store URL \"" + shown +
              "\" is neither sqlite:PATH nor postgresql://[user@]host[:port]/dbname"};
}

duration_result parse_duration(std::string_view text) {
  if (text.empty())
    return {{}, "empty duration (expected e.g. 7d, 36h, 2w)"};
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  const std::string shown(text.substr(0, 40));
  if (ec != std::errc() || end == text.data() || n <= 0)
    return {{}, "duration \"" + shown + "\" does not start with a positive whole number"};
  const std::string_view unit(end, static_cast<size_t>(text.data() + text.size() - end));
  std::int64_t scale = 0;
  if (unit == "s")
    scale = 1;
  else if (unit == "m")
    scale = 60;
  else if (unit == "h")
    scale = 3600;
  else if (unit == "d")
    scale = 86400;
  else if (unit == "w")
    scale = std::int64_t{7} * 86400;
  else
    return {{}, "duration \"" + shown + "\" needs one unit: s, m, h, d or w"};
  if (n > (std::int64_t{1} << 40) / scale)
    return {{}, "duration \"" + shown + "\" is too long"};
  return {n * scale, {}};
}

namespace {
bool digits(std::string_view text, size_t at, size_t count, int& out) {
  if (at + count > text.size())
    return false;
  out = 0;
  for (size_t i = at; i < at + count; ++i) {
    if (text[i] < '0' || text[i] > '9')
      return false;
    out = out * 10 + (text[i] - '0');
  }
  return true;
}

// Days from 1970-01-01 to the civil date (proleptic Gregorian), valid for all years here.
std::int64_t days_from_civil(int y, int m, int d) {
  y -= m <= 2 ? 1 : 0;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return std::int64_t{era} * 146097 + doe - 719468;
}

bool leap(int y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}
} // namespace

std::optional<std::int64_t> parse_utc_time(std::string_view text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!digits(text, 0, 4, y) || text.size() < 10 || text[4] != '-' || !digits(text, 5, 2, mo) ||
      text[7] != '-' || !digits(text, 8, 2, d))
    return std::nullopt;
  if (text.size() == 10) {
    // date only
  } else if (text.size() == 20 && text[10] == 'T' && digits(text, 11, 2, h) && text[13] == ':' &&
             digits(text, 14, 2, mi) && text[16] == ':' && digits(text, 17, 2, s) &&
             text[19] == 'Z') {
    if (h > 23 || mi > 59 || s > 60)
      return std::nullopt;
  } else {
    return std::nullopt;
  }
  static constexpr int month_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12 || d < 1 || d > month_days[mo - 1] + (mo == 2 && leap(y) ? 1 : 0))
    return std::nullopt;
  return days_from_civil(y, mo, d) * 86400 + std::int64_t{h} * 3600 + std::int64_t{mi} * 60 + s;
}

std::string format_utc_time(std::int64_t seconds, bool date_only) {
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr)
    return "?";
  char buf[64];
  const int year = tm.tm_year + 1900; // strftime's %Y does not pad years below 1000
  if (date_only)
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", year, tm.tm_mon + 1, tm.tm_mday);
  else
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", year, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

} // namespace strata::site
