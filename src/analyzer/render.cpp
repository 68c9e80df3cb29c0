#include "analyzer/render.hpp"
#include "common/message_kinds.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <strata/version.h>

#include <algorithm>
#include <cstdio>
#include <map>

namespace strata::analyze {

namespace {
// Whether a kind of the report's pairs is a two-sided one (not put, get or accumulate).
bool is_point_to_point_kind(const std::string& kind) {
  for (int k = 0; k < common::pair_kind_count; ++k)
    if (kind == common::pair_kind_names[k])
      return common::is_point_to_point(k);
  return true;
}

// The report's point-to-point pairs summed over their kinds, by sender and receiver (the
// one-sided operations are in their kinds alone, as in a job record).
std::vector<message_pair> pair_totals(const report& r) {
  std::map<std::pair<uint32_t, uint32_t>, message_pair> sums;
  for (const message_pair& p : r.pairs) {
    if (!is_point_to_point_kind(p.kind))
      continue;
    message_pair& s = sums[{p.from, p.to}];
    s.from = p.from;
    s.to = p.to;
    s.messages += p.messages;
    s.bytes += p.bytes;
  }
  std::vector<message_pair> out;
  out.reserve(sums.size());
  for (auto& [key, p] : sums)
    out.push_back(p);
  return out;
}

// Text reports list this many of the heaviest pairs.
constexpr size_t text_pairs = 20;
} // namespace

std::string render_text(const report& r) {
  std::string out = "Strata " STRATA_VERSION " analysis";
  out += r.creator.empty() ? std::string("\n") : " of a trace written by " + r.creator + "\n";
  out += fmt::format("Trace {}: {} ranks, {} events, {} messages matched, {} collectives\n",
                     r.archive, r.ranks, r.events, r.messages, r.collectives);
  for (const std::string& w : r.warnings)
    out += "warning: " + w + "\n";

  // Tables 1 and 6: a column per level.
  uint32_t levels = 0;
  for (const level_row& l : r.levels)
    levels = std::max(levels, l.level + 1);
  out += "\nOperations per level and process\n";
  out += fmt::format("{:>8}", "process");
  for (uint32_t l = 0; l < levels; ++l)
    out += fmt::format(" {:>12}", fmt::format("level {}", l));
  out += "\n";
  std::map<uint32_t, std::vector<uint64_t>> by_rank;
  for (const level_row& l : r.levels) {
    auto& row = by_rank[l.rank];
    row.resize(levels);
    row[l.level] = l.count;
  }
  for (const auto& [rank, counts] : by_rank) {
    out += fmt::format("{:>8}", rank);
    for (uint64_t c : counts)
      out += fmt::format(" {:>12}", c);
    out += "\n";
  }

  // Tables 2 and 7.
  size_t op_width = 9, file_width = 4;
  for (const operation_row& o : r.operations) {
    op_width = std::max(op_width, o.operation.size());
    file_width = std::max(file_width, o.file.size());
  }
  out += "\nOperations per process, operation and call site\n";
  out += fmt::format("{:>8} {:<8} {:<{}} {:<{}} {:>6} {:>10} {:>12}\n", "process", "category",
                     "operation", op_width, "file", file_width, "line", "count", "time (s)");
  for (const operation_row& o : r.operations)
    out += fmt::format("{:>8} {:<8} {:<{}} {:<{}} {:>6} {:>10} {:>12.6f}\n", o.rank, o.category,
                       o.operation, op_width, o.file, file_width, o.line, o.count, o.time_s);

  // Tables 3 and 8.
  out += "\nOperations in total\n";
  out += fmt::format("{:<8} {:<{}} {:>12} {:>12}\n", "category", "operation", op_width, "count",
                     "time (s)");
  for (const operation_total& t : r.totals)
    out += fmt::format("{:<8} {:<{}} {:>12} {:>12.6f}\n", t.category, t.operation, op_width,
                       t.count, t.time_s);

  // Table 4.
  out += "\nCommunication and total time per process (s)\n";
  out += fmt::format("{:>8} {:>14} {:>14}\n", "process", "communication", "total");
  for (const process_row& p : r.processes)
    out += fmt::format("{:>8} {:>14.6f} {:>14.6f}\n", p.rank, p.communication_s, p.total_s);

  if (!r.counted.empty()) {
    size_t name_width = 9;
    for (const counted_calls& c : r.counted)
      name_width = std::max(name_width, c.routine.size());
    out += "\nCalls counted, not recorded, per process (trace:cheap_calls=record records them)\n";
    out += fmt::format("{:>8} {:<{}} {:>12}\n", "process", "operation", name_width, "count");
    for (const counted_calls& c : r.counted)
      out += fmt::format("{:>8} {:<{}} {:>12}\n", c.rank, c.routine, name_width, c.calls);
  }

  std::vector<message_pair> pairs = pair_totals(r);
  if (!pairs.empty()) {
    std::stable_sort(pairs.begin(), pairs.end(), [](const message_pair& a, const message_pair& b) {
      return a.bytes > b.bytes;
    });
    out += "\nPoint-to-point messages between ranks, heaviest first\n";
    out += fmt::format("{:>8} {:>8} {:>12} {:>16}\n", "from", "to", "messages", "bytes");
    for (size_t i = 0; i < pairs.size() && i < text_pairs; ++i)
      out += fmt::format("{:>8} {:>8} {:>12} {:>16}\n", pairs[i].from, pairs[i].to,
                         pairs[i].messages, pairs[i].bytes);
    if (pairs.size() > text_pairs)
      out += fmt::format("({} more pairs: --json or --csv lists them all)\n",
                         pairs.size() - text_pairs);
  }

  out += "\nWait states by call site\n";
  if (r.wait_states.empty()) {
    out += "(none)\n";
    return out;
  }
  size_t fn_width = 8;
  for (const wait_state_row& w : r.wait_states) {
    fn_width = std::max(fn_width, w.function.size());
    file_width = std::max(file_width, w.file.size());
  }
  out += fmt::format("{:<16} {:<{}} {:<{}} {:>6} {:>8} {:>12} {:>8}\n", "pattern", "function",
                     fn_width, "file", file_width, "line", "rank", "time (s)", "count");
  for (const wait_state_row& w : r.wait_states)
    out += fmt::format("{:<16} {:<{}} {:<{}} {:>6} {:>8} {:>12.6f} {:>8}\n", w.pattern, w.function,
                       fn_width, w.file, file_width, w.line, w.rank, w.time_s, w.count);
  return out;
}

std::string render_json(const report& r) {
  using nlohmann::json;
  json j;
  j["format"] = "strata.analysis/1";
  j["strata_version"] = STRATA_VERSION;
  j["archive"] = r.archive;
  if (!r.creator.empty())
    j["written_by"] = r.creator;
  j["ranks"] = r.ranks;
  j["events"] = r.events;
  j["messages"] = r.messages;
  j["unmatched_sends"] = r.unmatched_sends;
  j["unmatched_receives"] = r.unmatched_receives;
  j["collectives"] = r.collectives;
  j["incomplete_collectives"] = r.incomplete_collectives;
  j["warnings"] = r.warnings;
  j["dropped_events"] = r.dropped_events;
  j["truncation"] = json::array();
  for (const truncation_row& t : r.truncation) {
    json row = {{"rank", t.rank}, {"dropped_events", t.dropped_events}};
    if (t.missing_after_s >= 0)
      row["missing_after_s"] = t.missing_after_s;
    if (t.missing_before_s >= 0)
      row["missing_before_s"] = t.missing_before_s;
    j["truncation"].push_back(row);
  }
  j["counted_calls"] = json::array();
  for (const counted_calls& c : r.counted)
    j["counted_calls"].push_back({{"rank", c.rank}, {"operation", c.routine}, {"count", c.calls}});
  j["levels"] = json::array();
  for (const level_row& l : r.levels)
    j["levels"].push_back({{"rank", l.rank}, {"level", l.level}, {"count", l.count}});
  j["operations"] = json::array();
  for (const operation_row& o : r.operations)
    j["operations"].push_back({{"rank", o.rank},
                               {"category", o.category},
                               {"operation", o.operation},
                               {"file", o.file},
                               {"line", o.line},
                               {"count", o.count},
                               {"time_s", o.time_s}});
  j["totals"] = json::array();
  for (const operation_total& t : r.totals)
    j["totals"].push_back({{"category", t.category},
                           {"operation", t.operation},
                           {"count", t.count},
                           {"time_s", t.time_s}});
  j["processes"] = json::array();
  for (const process_row& p : r.processes)
    j["processes"].push_back(
        {{"rank", p.rank}, {"communication_s", p.communication_s}, {"total_s", p.total_s}});
  // The communication matrix: every pair, and the same per kind of message.
  json pairs = json::array();
  for (const message_pair& p : pair_totals(r))
    pairs.push_back({{"from", p.from}, {"to", p.to}, {"messages", p.messages}, {"bytes", p.bytes}});
  json kinds = json::object();
  for (const message_pair& p : r.pairs) {
    json& list = kinds[p.kind];
    list.push_back({{"from", p.from}, {"to", p.to}, {"messages", p.messages}, {"bytes", p.bytes}});
  }
  j["communication"] = {{"pairs", pairs}, {"by_kind", kinds}};
  j["wait_states"] = json::array();
  for (const wait_state_row& w : r.wait_states)
    j["wait_states"].push_back({{"pattern", w.pattern},
                                {"function", w.function},
                                {"file", w.file},
                                {"line", w.line},
                                {"rank", w.rank},
                                {"time_s", w.time_s},
                                {"count", w.count}});
  return j.dump(2) + "\n";
}

namespace {
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos)
    return s;
  std::string quoted = "\"";
  for (char c : s) {
    if (c == '"')
      quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}
} // namespace

std::string render_csv(const report& r) {
  std::string out = "table,rank,level,count\n";
  for (const level_row& l : r.levels)
    out += fmt::format("levels,{},{},{}\n", l.rank, l.level, l.count);
  out += "\ntable,rank,category,operation,file,line,count,time_s\n";
  for (const operation_row& o : r.operations)
    out += fmt::format("operations,{},{},{},{},{},{},{:.9f}\n", o.rank, o.category,
                       csv_field(o.operation), csv_field(o.file), o.line, o.count, o.time_s);
  out += "\ntable,category,operation,count,time_s\n";
  for (const operation_total& t : r.totals)
    out += fmt::format("totals,{},{},{},{:.9f}\n", t.category, csv_field(t.operation), t.count,
                       t.time_s);
  out += "\ntable,rank,communication_s,total_s\n";
  for (const process_row& p : r.processes)
    out += fmt::format("processes,{},{:.9f},{:.9f}\n", p.rank, p.communication_s, p.total_s);
  out += "\ntable,pattern,function,file,line,rank,time_s,count\n";
  for (const wait_state_row& w : r.wait_states)
    out += fmt::format("wait_states,{},{},{},{},{},{:.9f},{}\n", w.pattern, csv_field(w.function),
                       csv_field(w.file), w.line, w.rank, w.time_s, w.count);
  out += "\ntable,from,to,kind,messages,bytes\n";
  for (const message_pair& p : r.pairs)
    out += fmt::format("pairs,{},{},{},{},{}\n", p.from, p.to, p.kind, p.messages, p.bytes);
  out += "\ntable,rank,operation,count\n";
  for (const counted_calls& c : r.counted)
    out += fmt::format("counted_calls,{},{},{}\n", c.rank, csv_field(c.routine), c.calls);
  out += "\ntable,rank,dropped_events,missing_after_s,missing_before_s\n";
  auto optional_seconds = [](double s) { return s >= 0 ? fmt::format("{:.9f}", s) : ""; };
  for (const truncation_row& t : r.truncation)
    out += fmt::format("truncation,{},{},{},{}\n", t.rank, t.dropped_events,
                       optional_seconds(t.missing_after_s), optional_seconds(t.missing_before_s));
  return out;
}

void print_report(const report& r, const std::string& format, const char* command) {
  const std::string text = format == "json"  ? render_json(r)
                           : format == "csv" ? render_csv(r)
                                             : render_text(r);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  if (format != "text" && !r.truncated.empty())
    std::fprintf(stderr, "%s: warning: %s\n", command, r.truncated.c_str());
}

} // namespace strata::analyze
