// The small text formats the site commands read by hand: store URLs, durations ("7d") and the
// UTC timestamps of job records. Pure functions, no I/O; each failure is one line naming the
// problem. Fuzzed by fuzz/site_parse_fuzz.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata::site {

enum class backend { sqlite, postgresql };

struct db_url {
  backend kind = backend::sqlite;
  // sqlite: the database file; postgresql: the URL as given, which libpq reads itself.
  std::string target;
};

struct url_result {
  std::optional<db_url> url;
  std::string error;
};

// "sqlite:PATH" (also "sqlite://PATH"), "postgresql://..." or "postgres://...".
url_result parse_db_url(std::string_view text);

struct duration_result {
  std::optional<std::int64_t> seconds;
  std::string error;
};

// A positive whole number followed by one unit: s, m, h, d or w ("7d", "36h", "2w").
duration_result parse_duration(std::string_view text);

// "YYYY-MM-DDTHH:MM:SSZ" (the record's format) or "YYYY-MM-DD" (midnight UTC) to seconds since
// the epoch; nullopt when it is neither or names no real date.
std::optional<std::int64_t> parse_utc_time(std::string_view text);

// The inverse: "YYYY-MM-DDTHH:MM:SSZ", or "YYYY-MM-DD" with `date_only`.
std::string format_utc_time(std::int64_t seconds, bool date_only = false);

} // namespace strata::site
