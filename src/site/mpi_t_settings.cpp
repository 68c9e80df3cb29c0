#include "site/mpi_t_settings.hpp"

#include <algorithm>
#include <cstring>

namespace strata::site {
namespace {

constexpr char field_separator = setting_field_separator;
constexpr char record_separator = setting_record_separator;

void append_clean(std::string& out, std::string_view text) {
  // memchr rather than find_first_of, which looks each character up in the set (most of an
  // ingest's indexing of MPI_T once).
  if (std::memchr(text.data(), field_separator, text.size()) == nullptr &&
      std::memchr(text.data(), record_separator, text.size()) == nullptr) {
    out.append(text);
    return;
  }
  for (const char c : text)
    out += c == field_separator || c == record_separator ? '?' : c;
}

} // namespace

std::string settings_text(const std::vector<setting>& settings) {
  std::vector<const setting*> sorted;
  sorted.reserve(settings.size());
  for (const setting& s : settings)
    sorted.push_back(&s);
  std::sort(sorted.begin(), sorted.end(),
            [](const setting* a, const setting* b) { return a->name < b->name; });
  std::string out;
  for (const setting* s : sorted)
    append_setting_line(out, s->name, s->value, s->from_environment);
  return out;
}

void append_setting_line(std::string& out, std::string_view name, std::string_view value,
                         bool from_environment) {
  append_clean(out, name);
  out += field_separator;
  append_clean(out, value);
  out += field_separator;
  out += from_environment ? '1' : '0';
  out += record_separator;
}

// memchr from one to the next (std::count, a byte at a time, took as long as writing the
// text): about one call per separator.
size_t count_of(std::string_view text, char c) {
  size_t n = 0;
  const char* at = text.data();
  const char* const end = text.data() + text.size();
  while (at != end) {
    at = static_cast<const char*>(std::memchr(at, c, static_cast<size_t>(end - at)));
    if (at == nullptr)
      break;
    ++n;
    ++at;
  }
  return n;
}

bool only_own_separators(std::string_view lines_text, size_t lines) {
  return count_of(lines_text, field_separator) == 2 * lines &&
         count_of(lines_text, record_separator) == lines;
}

std::vector<setting> settings_of_text(const std::string& text) {
  std::vector<setting> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find(record_separator, at);
    const std::string line = text.substr(at, end == std::string::npos ? end : end - at);
    at = end == std::string::npos ? text.size() : end + 1;
    const size_t a = line.find(field_separator);
    const size_t b = a == std::string::npos ? a : line.find(field_separator, a + 1);
    if (b == std::string::npos)
      continue;
    out.push_back({line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1) == "1"});
  }
  return out;
}

} // namespace strata::site
