#include "analyzer/perfetto_export.hpp"

#include "analyzer/event_tee.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <strata/version.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace strata::analyze {
namespace fs = std::filesystem;

namespace {

constexpr size_t flush_at = size_t{1} << 20;

std::runtime_error io_error(const std::string& name, const char* what) {
  return std::runtime_error(name + ": " + what + " (" + std::strerror(errno) + ")");
}

void write_all(int fd, const char* data, size_t size, uint64_t at, bool positioned,
               const std::string& name) {
  while (size > 0) {
    const ssize_t n =
        positioned ? ::pwrite(fd, data, size, static_cast<off_t>(at)) : ::write(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      throw io_error(name, "write failed");
    data += n;
    size -= static_cast<size_t>(n);
    at += static_cast<uint64_t>(n);
  }
}

uint32_t parse_rank(const std::string& text, const std::string& whole) {
  if (text.empty() || text.size() > 10 || text.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument("'" + whole + "' is not a rank range such as 0-15 or 3");
  const unsigned long long value = std::stoull(text);
  if (value >= UINT32_MAX)
    throw std::invalid_argument("'" + whole + "': rank " + text + " is out of range");
  return static_cast<uint32_t>(value);
}

std::string json_text(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The ranks the file holds, inclusive.
std::pair<uint32_t, uint32_t> kept_ranks(const definitions& defs, const perfetto_selection& s) {
  const auto last = static_cast<uint32_t>(defs.ranks() - 1);
  return {s.first_rank, std::min(s.last_rank, last)};
}

} // namespace

void parse_rank_range(const std::string& text, perfetto_selection& selection) {
  const size_t dash = text.find('-');
  const uint32_t first = parse_rank(text.substr(0, dash), text);
  const uint32_t last = dash == std::string::npos ? first : parse_rank(text.substr(dash + 1), text);
  if (last < first)
    throw std::invalid_argument("'" + text + "': the range ends before it begins");
  selection.first_rank = first;
  selection.last_rank = last;
}

void check_selection(const definitions& defs, const perfetto_selection& s) {
  if (defs.ranks() == 0)
    throw trace_error(defs.archive + ": the trace has no locations");
  const uint64_t last = defs.ranks() - 1;
  if (s.first_rank > last || (s.last_rank != UINT32_MAX && s.last_rank > last))
    throw trace_error(
        fmt::format("--ranks {}-{}: the trace has ranks 0 to {}", s.first_rank, s.last_rank, last));
  if (!(s.from_s >= 0) || std::isnan(s.to_s) || !(s.to_s > s.from_s))
    throw trace_error(
        fmt::format("--from {} --to {}: not a time window (seconds from the start of the trace, "
                    "--from below --to)",
                    s.from_s, s.to_s));
}

perfetto_stream::perfetto_stream(const std::string& path, const std::string& near) {
  if (!path.empty()) {
    name_ = path;
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw io_error(path, "cannot write");
  } else {
    fs::path dir = fs::path(near).parent_path();
    std::string pattern = ((dir.empty() ? fs::path(".") : dir) / ".strata-export-XXXXXX").string();
    fd_ = ::mkstemp(pattern.data());
    if (fd_ < 0)
      throw io_error(pattern, "cannot create a scratch file");
    ::unlink(pattern.c_str());
    name_ = pattern;
  }
  buffered_.reserve(flush_at + 4096);
}

perfetto_stream::~perfetto_stream() {
  if (fd_ >= 0)
    ::close(fd_);
}

void perfetto_stream::append(const char* data, size_t size) {
  buffered_.append(data, size);
  if (buffered_.size() >= flush_at)
    flush();
}

void perfetto_stream::flush() {
  write_all(fd_, buffered_.data(), buffered_.size(), 0, false, name_);
  written_ += buffered_.size();
  buffered_.clear();
}

void perfetto_stream::copy_into(int to, uint64_t at, const std::string& to_name) {
  std::vector<char> chunk(flush_at);
  uint64_t from = 0;
  while (from < written_) {
    const ssize_t n = ::pread(fd_, chunk.data(), chunk.size(), static_cast<off_t>(from));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      throw io_error(name_, "read back failed");
    write_all(to, chunk.data(), static_cast<size_t>(n), at + from, true, to_name);
    from += static_cast<uint64_t>(n);
  }
}

std::string perfetto_header(const definitions& defs, const perfetto_selection& selection) {
  std::string out = "{\"traceEvents\":[\n";
  const auto [first, last] = kept_ranks(defs, selection);
  for (uint64_t r = first; r <= last; ++r) {
    const uint64_t pid = r + 1;
    out += fmt::format("{}{{\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"process_name\","
                       "\"args\":{{\"name\":\"rank {}\"}}}},\n"
                       "{{\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"process_sort_index\","
                       "\"args\":{{\"sort_index\":{}}}}},\n"
                       "{{\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"thread_name\","
                       "\"args\":{{\"name\":\"rank {}\"}}}}",
                       r == first ? "" : ",\n", pid, pid, r, pid, pid, r, pid, pid, r);
  }
  return out;
}

std::string perfetto_footer(const definitions& defs, const perfetto_selection& selection) {
  const auto [first, last] = kept_ranks(defs, selection);
  std::string other = "{\"source\":\"strata trace export --perfetto\",\"strata_version\":\"" +
                      std::string(STRATA_VERSION) + "\",\"archive\":" + json_text(defs.archive);
  if (!defs.creator.empty())
    other += ",\"written_by\":" + json_text(defs.creator);
  other += fmt::format(",\"ranks\":\"{}-{}\",\"from_s\":{}", first, last, selection.from_s);
  if (!std::isinf(selection.to_s))
    other += fmt::format(",\"to_s\":{}", selection.to_s);
  if (const std::string t = truncation_line(defs.notes, defs.global_offset, defs.timer_resolution);
      !t.empty())
    other += ",\"truncated\":" + json_text(t);
  return "\n],\n\"otherData\":" + other + "}}\n";
}

void print_perfetto_result(const perfetto_result& r) {
  std::printf("%s: %u ranks, %llu operations, %llu messages, %llu wait states\n", r.file.c_str(),
              r.ranks, static_cast<unsigned long long>(r.counts.slices),
              static_cast<unsigned long long>(r.counts.flows),
              static_cast<unsigned long long>(r.counts.waits));
  std::fflush(stdout);
  if (!r.truncated.empty())
    std::fprintf(stderr, "strata trace export: warning: %s\n", r.truncated.c_str());
  if (r.counts.slices == 0)
    std::fprintf(stderr, "strata trace export: warning: no operation of the trace is in the "
                         "selected ranks and time window\n");
}

perfetto_result export_perfetto(const std::string& trace, const std::string& out,
                                const perfetto_selection& selection) {
  trace_reader reader(trace);
  const definitions& defs = reader.defs();
  check_selection(defs, selection);
  const std::string partial = out + ".partial";
  perfetto_result result;
  try {
    perfetto_stream file(partial, out);
    perfetto_stream links("", out);
    file.append(perfetto_header(defs, selection));
    perfetto_writer writer(defs, selection, 0, static_cast<uint32_t>(defs.ranks()), file, links, 0,
                           1);
    analyzer analysis(defs, &writer.observer());
    event_tee tee(writer.events(), analysis);
    const uint64_t events = reader.read_events(tee);
    analysis.finish(events); // closes what is open, settles the last waits
    result.counts = writer.finish();
    links.copy_into(file.fd(), file.size(), partial);
    const uint64_t end = file.size() + links.size();
    const std::string footer = perfetto_footer(defs, selection);
    write_all(file.fd(), footer.data(), footer.size(), end, true, partial);
  } catch (...) {
    ::unlink(partial.c_str());
    throw;
  }
  if (::rename(partial.c_str(), out.c_str()) != 0) {
    const std::runtime_error e = io_error(out, "cannot rename the finished file into place");
    ::unlink(partial.c_str());
    throw e;
  }
  result.file = out;
  const auto [first, last] = kept_ranks(defs, selection);
  result.ranks = last - first + 1;
  result.truncated = truncation_line(defs.notes, defs.global_offset, defs.timer_resolution);
  return result;
}

} // namespace strata::analyze
