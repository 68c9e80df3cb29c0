#include "profiler/call_sites.hpp"

#include <algorithm>
#include <charconv>
#include <climits>

namespace strata::profiler {

namespace {

std::string clean_field(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c == '\t' || c == '\n')
      c = ' ';
  return out;
}

template <typename T> bool read_number(std::string_view text, T& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

// The fields of one line, split at tabs.
std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> f;
  size_t start = 0;
  for (size_t tab = line.find('\t'); tab != std::string_view::npos; tab = line.find('\t', start)) {
    f.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
  f.push_back(line.substr(start));
  return f;
}

bool read_callsite(std::string_view line, callsite_total& site) {
  const std::vector<std::string_view> f = fields(line);
  if (f.size() != 9 || !read_number(f[2], site.line) || !read_number(f[4], site.calls) ||
      !read_number(f[5], site.time_ns) || !read_number(f[6], site.bytes) ||
      !read_number(f[7], site.wasted_ns) || !read_number(f[8], site.ranks) || site.ranks < 0)
    return false;
  site.function = f[0];
  site.file = f[1];
  site.caller = f[3];
  return true;
}

} // namespace

void ranks_summary::add_host(std::string_view host) {
  if (std::find(hosts_.begin(), hosts_.end(), host) == hosts_.end())
    hosts_.emplace_back(host);
}

void ranks_summary::add_callsite(const callsite_total& site) {
  std::string key = site.function;
  key += '\t';
  key += site.file;
  key += '\t';
  key += std::to_string(site.line);
  const auto [at, inserted] = index_.try_emplace(std::move(key), sites_.size());
  if (inserted) {
    sites_.push_back(site);
    return;
  }
  callsite_total& c = sites_[at->second];
  c.calls += site.calls;
  c.time_ns += site.time_ns;
  c.bytes += site.bytes;
  c.wasted_ns += site.wasted_ns;
  c.ranks = c.ranks > INT_MAX - site.ranks ? INT_MAX : c.ranks + site.ranks; // a text's ranks
}

void ranks_summary::add_text(std::string_view text) {
  text = text.substr(0, text.find('\0'));
  size_t pos = 0;
  bool first = true;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    const std::string_view line = text.substr(pos, end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    if (first) {
      first = false;
      for (std::string_view host : fields(line))
        if (!host.empty())
          add_host(host);
      continue;
    }
    callsite_total site;
    if (read_callsite(line, site))
      add_callsite(site);
  }
}

std::vector<callsite_total> ranks_summary::ordered_callsites() const {
  std::vector<callsite_total> sorted = sites_;
  std::sort(sorted.begin(), sorted.end(), [](const callsite_total& a, const callsite_total& b) {
    return a.wasted_ns != b.wasted_ns ? a.wasted_ns > b.wasted_ns : a.time_ns > b.time_ns;
  });
  return sorted;
}

std::string summary_text(const std::vector<std::string>& hosts,
                         const std::vector<callsite_total>& sites) {
  std::string text;
  for (size_t i = 0; i < hosts.size(); ++i)
    text += (i == 0 ? "" : "\t") + clean_field(hosts[i]);
  text += '\n';
  for (const callsite_total& c : sites)
    text += clean_field(c.function) + "\t" + clean_field(c.file) + "\t" + std::to_string(c.line) +
            "\t" + clean_field(c.caller) + "\t" + std::to_string(c.calls) + "\t" +
            std::to_string(c.time_ns) + "\t" + std::to_string(c.bytes) + "\t" +
            std::to_string(c.wasted_ns) + "\t" + std::to_string(c.ranks) + "\n";
  return text;
}

std::string summary_text(const ranks_summary& summary) {
  return summary_text(summary.hosts(), summary.callsites());
}

} // namespace strata::profiler
