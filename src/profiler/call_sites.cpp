#include "profiler/call_sites.hpp"

#include <algorithm>
#include <charconv>

namespace strata::profiler {

namespace {

std::string clean_field(std::string text) {
  for (char& c : text)
    if (c == '\t' || c == '\n')
      c = ' ';
  return text;
}

template <typename T> bool read_number(std::string_view text, T& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

} // namespace

void merge_callsite(std::vector<callsite_total>& list, const callsite_total& site) {
  for (callsite_total& c : list) {
    if (c.function == site.function && c.file == site.file && c.line == site.line) {
      c.calls += site.calls;
      c.time_ns += site.time_ns;
      c.bytes += site.bytes;
      c.wasted_ns += site.wasted_ns;
      c.ranks += site.ranks;
      return;
    }
  }
  list.push_back(site);
}

std::string callsite_lines(const std::vector<callsite_total>& sites) {
  std::string lines;
  for (const callsite_total& c : sites)
    lines += c.function + "\t" + clean_field(c.file) + "\t" + std::to_string(c.line) + "\t" +
             clean_field(c.caller) + "\t" + std::to_string(c.calls) + "\t" +
             std::to_string(c.time_ns) + "\t" + std::to_string(c.bytes) + "\t" +
             std::to_string(c.wasted_ns) + "\n";
  return lines;
}

std::vector<callsite_total> merge_callsite_lines(std::string_view lines) {
  std::vector<callsite_total> merged;
  size_t pos = 0;
  while (pos < lines.size()) {
    const size_t end = lines.find('\n', pos);
    const std::string_view line = lines.substr(pos, end - pos);
    pos = end == std::string_view::npos ? lines.size() : end + 1;
    std::vector<std::string_view> f;
    size_t start = 0;
    for (size_t tab = line.find('\t'); tab != std::string_view::npos;
         tab = line.find('\t', start)) {
      f.push_back(line.substr(start, tab - start));
      start = tab + 1;
    }
    f.push_back(line.substr(start));
    callsite_total site{std::string(f[0]), {}, 0, {}, 0, 0, 0, 0, 1};
    if (f.size() != 8 || !read_number(f[2], site.line) || !read_number(f[4], site.calls) ||
        !read_number(f[5], site.time_ns) || !read_number(f[6], site.bytes) ||
        !read_number(f[7], site.wasted_ns))
      continue;
    site.file = f[1];
    site.caller = f[3];
    merge_callsite(merged, site);
  }
  std::sort(merged.begin(), merged.end(), [](const callsite_total& a, const callsite_total& b) {
    return a.wasted_ns != b.wasted_ns ? a.wasted_ns > b.wasted_ns : a.time_ns > b.time_ns;
  });
  return merged;
}

} // namespace strata::profiler
