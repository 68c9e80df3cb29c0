#include "profiler/record/render.hpp"
#include "profiler/record/render_communication.hpp"
#include "profiler/record/render_mpi_t.hpp"

#include "common/markup.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <initializer_list>
#include <iterator>
#include <utility>
#include <vector>

namespace strata::record {

namespace {

constexpr std::array<std::string_view, 4> format_names = {"text", "json", "csv", "html"};

// ---- Figures shared by all formats ----

struct routine_row {
  const routine* measured = nullptr;
  std::optional<double> percent_of_mpi; // none when no time was spent in MPI at all
  std::optional<double> us_per_call, bytes_per_call;
  std::optional<double> imbalance; // max per-rank time / mean per-rank time
  std::optional<time_split> split;
};

// MPI_Init and MPI_Finalize bracket the measured interval: they are not MPI time (the job's MPI %
// leaves them out too), so they get no share.
bool brackets_the_run(const std::string& name) {
  return name == "MPI_Init" || name == "MPI_Init_thread" || name == "MPI_Finalize";
}

std::vector<routine_row> routine_rows(const job_record& record, const model::machine_model* model) {
  // Percentages are of the routines' own sum (MPI time) so that the column adds up to 100.
  double total = 0;
  for (const routine& r : record.routines)
    if (!brackets_the_run(r.name))
      total += r.time_s;
  std::vector<routine_row> rows;
  for (const routine& r : record.routines) {
    routine_row& row = rows.emplace_back();
    row.measured = &r;
    if (r.calls > 0)
      row.bytes_per_call = static_cast<double>(r.bytes()) / static_cast<double>(r.calls);
    // Counted, never timed (calls that cannot wait): no time figure at all rather than a 0.
    if (!r.timed.value)
      continue;
    if (total > 0 && !brackets_the_run(r.name))
      row.percent_of_mpi = 100 * r.time_s / total;
    if (r.calls > 0)
      row.us_per_call = 1e6 * r.time_s / static_cast<double>(r.calls);
    if (r.per_rank.time_s.mean > 0)
      row.imbalance = r.per_rank.time_s.max / r.per_rank.time_s.mean;
    if (model != nullptr)
      if (const auto it = model->routines.find(r.name); it != model->routines.end())
        row.split = split_time(r, it->second);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const routine_row& a, const routine_row& b) {
    return a.measured->time_s > b.measured->time_s;
  });
  return rows;
}

// ---- Human-readable numbers ----

// About three significant figures and no exponents: a column of them reads at a glance.
std::string short_number(double value) {
  if (value >= 100 || value == std::floor(value))
    return fmt::format("{:.0f}", value);
  return fmt::format("{:.{}f}", value, value >= 10 ? 1 : 2);
}

std::string scaled(double value, double step, std::initializer_list<const char*> units) {
  const char* const* unit = units.begin();
  for (; value >= step && unit + 1 != units.end(); ++unit)
    value /= step;
  return short_number(value) + *unit;
}

std::string human_count(double value) {
  // Exact up to five digits: small call counts are often checked against the source code.
  return value < 1e5 ? fmt::format("{:.0f}", value)
                     : scaled(value, 1000, {"", " k", " M", " G", " T", " P", " E"});
}

std::string human_bytes(double value) {
  return scaled(value, 1024, {" B", " KiB", " MiB", " GiB", " TiB", " PiB", " EiB"});
}

std::string human_seconds(double seconds) {
  for (const auto& [scale, unit] : {std::pair{1.0, " s"}, {1e-3, " ms"}, {1e-6, " us"}})
    if (seconds >= scale || seconds == 0)
      return short_number(seconds / scale) + unit;
  return short_number(seconds * 1e9) + " ns";
}

template <typename T> std::string or_dash(const std::optional<T>& value, auto format) {
  return value ? format(*value) : "-";
}

// ---- The content of the text and html reports, before escaping ----

using table = std::vector<std::vector<std::string>>;

struct section {
  std::string title;
  bool headed = false; // a first row of column headings; numbers right-aligned in text
  table rows;
  std::string note;
  // Markup of our own (not from the record) after it, in HTML only: the communication heat map.
  std::string html_figure;
};

// Arguments as a shell would need them, so the command line can be read back unambiguously.
std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
  });
  if (plain)
    return word;
  std::string out = "'";
  for (char c : word)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string status_text(const job_facts& job) {
  std::string text = std::string(status_name(job.status));
  if (job.status == job_status::aborted && job.abort_code)
    text = fmt::format("aborted (MPI_Abort code {})", *job.abort_code);
  if (job.status == job_status::signal)
    text = job.signal ? fmt::format("killed by signal {}", *job.signal) : "killed by a signal";
  if (job.status == job_status::finalized && job.exit_code)
    text = fmt::format("finalized, then exit code {}", *job.exit_code);
  if (job.status == job_status::exit)
    text = "exited without MPI_Finalize";
  if (job.status == job_status::killed)
    text = "killed without a chance to say so (SIGKILL: a time limit, the out-of-memory killer or "
           "the launcher ending the job)";
  if (job.ranks_reported < job.ranks)
    text += fmt::format("; only {} of {} ranks reported", job.ranks_reported, job.ranks);
  // Partial: not the finalize's reduction over every rank (ranks left out of it, or a record that
  // strata recover rebuilt from the per-rank files).
  if (job.partial)
    text += job.status == job_status::finalized && job.ranks_reported < job.ranks
                ? "; partial record"
                : "; partial record rebuilt from per-rank files";
  return text;
}

table headline(const job_facts& job) {
  const percent_spread& by_rank = job.mpi_percent_by_rank;
  std::vector<std::string> arguments, variables;
  std::transform(job.argv.begin(), job.argv.end(), std::back_inserter(arguments), shell_word);
  for (const auto& [name, value] : job.environment)
    variables.push_back(name + "=" + value);
  table facts = {
      {"MPI time", fmt::format("{:.1f} % of wall time x ranks (per rank: min {:.1f} % on rank {}, "
                               "mean {:.1f} %, max {:.1f} % on rank {})",
                               job.mpi_percent, by_rank.min, by_rank.min_rank, by_rank.mean,
                               by_rank.max, by_rank.max_rank)},
      {"Wall time",
       fmt::format("{} (MPI {} summed over ranks, profiler overhead {}{})",
                   human_seconds(job.wall_time_s), human_seconds(job.mpi_time_s),
                   human_seconds(job.profiler_overhead_s),
                   job.profiler_finalize_s
                       ? "; record built at finalize in " + human_seconds(*job.profiler_finalize_s)
                       : std::string())},
      {"Ranks", fmt::format("{} on {} host{}", job.ranks, job.hosts, job.hosts == 1 ? "" : "s")},
      {"Hosts", fmt::format("{}", fmt::join(job.host_names, ", "))},
      {"Status", status_text(job)},
      {"User", fmt::format("{} (uid {})", job.user, job.uid)},
      {"Executable", job.executable},
      {"Arguments", fmt::format("{}", fmt::join(arguments, " "))},
      {"MPI library", fmt::format("{} ({}, {}, {})", job.mpi_library, job.mpi_flavor, job.language,
                                  job.thread_level)},
      {"Job", fmt::format("{} ({}), {} to {}", job.id, job.resource_manager, job.start, job.end)},
      {"Record", fmt::format("by the {} module of Strata {}",
                             job.module.value_or(std::string(profile_module)),
                             job.strata_version.value_or("(release not recorded)"))},
  };
  if (!variables.empty())
    facts.push_back({"Environment", fmt::format("{}", fmt::join(variables, " "))});
  if (job.poll_bytes_estimated.value_or(false))
    facts.push_back({"Note", "bytes received by untimed polls (MPI_Test, MPI_Testany, "
                             "MPI_Iprobe) are estimated from the timed ones"});
  if (job.clock && job.clock->status != "ok")
    facts.push_back(
        {"Clock", job.clock->status == "corrected"
                      ? fmt::format("times corrected for a calibration error of {:.1f} ppm "
                                    "(time-stamp counter against CLOCK_MONOTONIC)",
                                    job.clock->drift_ppm)
                      : fmt::format("times may be off: the time-stamp counter was {:.1f} ppm "
                                    "({} ns) away from CLOCK_MONOTONIC at the check, on another "
                                    "CPU than it was calibrated on",
                                    job.clock->drift_ppm, job.clock->offset_ns)});
  if (job.pmpi_intercepted_by_application)
    facts.push_back({"Note", "the program defines MPI functions itself; their time is not "
                             "separated from MPI's"});
  return facts;
}

table counter_table(const job_facts& job) {
  table t = {{"counter", "unit", "in MPI", "per s in MPI", "outside MPI", "per s outside"}};
  // Rates are per second of the time each side took, summed over ranks like the counts.
  const double outside_s =
      job.wall_time_s * static_cast<double>(job.ranks_reported) - job.mpi_time_s;
  const auto rate = [](std::uint64_t events, double seconds) {
    return seconds > 0 ? human_count(static_cast<double>(events) / seconds) + "/s" : "-";
  };
  for (const auto& [name, c] : job.counters)
    t.push_back({name, c.unit, human_count(static_cast<double>(c.in_mpi)),
                 rate(c.in_mpi, job.mpi_time_s), human_count(static_cast<double>(c.outside_mpi)),
                 rate(c.outside_mpi, outside_s)});
  return t;
}

table routine_table(const std::vector<routine_row>& rows, bool with_model) {
  table t = {{"routine", "calls", "time", "% MPI", "us/call", "bytes", "bytes/call", "imbalance"}};
  if (with_model)
    t[0].insert(t[0].end(), {"latency", "transfer", "sync"});
  for (const routine_row& row : rows) {
    const routine& r = *row.measured;
    auto& cells = t.emplace_back(std::vector<std::string>{
        r.name, human_count(static_cast<double>(r.calls)),
        r.timed.value ? human_seconds(r.time_s) : std::string("not timed"),
        or_dash(row.percent_of_mpi, [](double p) { return fmt::format("{:.1f}", p); }),
        or_dash(row.us_per_call, short_number), human_bytes(static_cast<double>(r.bytes())),
        or_dash(row.bytes_per_call, human_bytes), or_dash(row.imbalance, [&r](double imbalance) {
          return fmt::format("{:.2f} (rank {})", imbalance, r.per_rank.time_s.max_rank);
        })});
    if (with_model)
      for (double time_split::*part :
           {&time_split::latency_s, &time_split::transfer_s, &time_split::sync_s})
        cells.push_back(
            or_dash(row.split, [part](const time_split& s) { return human_seconds(s.*part); }));
  }
  return t;
}

// "routine | bound -> calls, ..." for the routines, in report order, that have the histogram.
table histograms(const std::vector<routine_row>& rows, bool sizes) {
  table out;
  for (const routine_row& row : rows) {
    const auto& bins = sizes ? row.measured->size_histogram : row.measured->comm_size_histogram;
    std::vector<std::string> parts;
    parts.reserve(bins.size());
    for (const histogram_bin& bin : bins)
      parts.push_back(fmt::format(
          "{} -> {}", sizes ? human_bytes(static_cast<double>(bin.key)) : std::to_string(bin.key),
          human_count(static_cast<double>(bin.calls))));
    if (!parts.empty())
      out.push_back({row.measured->name, fmt::format("{}", fmt::join(parts, ", "))});
  }
  return out;
}

// The call sites that took most time: where in the program to look first.
// With the overhead module, the time over the machine model's t_max ranks them instead.
bool has_wasted_time(const job_record& record) {
  for (const callsite& c : record.callsites)
    if (c.wasted_s > 0)
      return true;
  return false;
}

table callsite_table(const job_record& record) {
  constexpr size_t shown = 20;
  const bool wasted = has_wasted_time(record);
  std::vector<const callsite*> order;
  for (const callsite& c : record.callsites)
    order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [wasted](const callsite* a, const callsite* b) {
    return wasted ? a->wasted_s > b->wasted_s : a->time_s > b->time_s;
  });
  table t = {{"routine", "file:line", "in", "calls", "time", "ranks"}};
  if (wasted)
    t[0].insert(t[0].begin() + 5, "wasted");
  for (size_t i = 0; i < order.size() && i < shown; ++i) {
    const callsite& c = *order[i];
    auto& row = t.emplace_back(std::vector<std::string>{
        c.function, c.line != 0 ? fmt::format("{}:{}", c.file, c.line) : c.file,
        c.caller.empty() ? "-" : c.caller, human_count(static_cast<double>(c.calls)),
        human_seconds(c.time_s), std::to_string(c.ranks)});
    if (wasted)
      row.insert(row.begin() + 5, human_seconds(c.wasted_s));
  }
  return t;
}

std::vector<section> sections(const job_record& record, const model::machine_model* model) {
  const auto rows = routine_rows(record, model);
  std::vector<section> out = {{"Strata job report", false, headline(record.job), "", ""}};
  if (!record.job.counters.empty())
    out.push_back({"Counters", true, counter_table(record.job), "", ""});
  std::string note = rows.empty()       ? "No MPI routine was called."
                     : model != nullptr ? "latency = calls x model latency; transfer = bytes / "
                                          "model bandwidth; sync = the rest of the time"
                                        : "";
  if (std::any_of(rows.begin(), rows.end(),
                  [](const routine_row& row) { return !row.measured->timed.value; }))
    note += std::string(note.empty() ? "" : ". ") +
            "\"not timed\": calls that cannot wait, counted without reading the clock; their "
            "time is not in the MPI time";
  out.push_back({"Routines by time", true, routine_table(rows, model != nullptr), note, ""});
  if (!record.callsites.empty())
    out.push_back({has_wasted_time(record) ? "Call sites by wasted time" : "Call sites by time",
                   true, callsite_table(record),
                   record.callsites.size() > 20 ? fmt::format("{} more call sites in the record",
                                                              record.callsites.size() - 20)
                                                : "",
                   ""});
  if (auto sizes = histograms(rows, true); !sizes.empty())
    out.push_back({"Message sizes (bin lower bound -> calls)", false, std::move(sizes), "", ""});
  if (auto communicators = histograms(rows, false); !communicators.empty())
    out.push_back({"Communicator sizes (size -> calls)", false, std::move(communicators), "", ""});
  if (record.communication) {
    const std::size_t first = out.size();
    for (communication_table& t : communication_tables(*record.communication, record.job.ranks))
      out.push_back({std::move(t.title), t.headed, std::move(t.rows), std::move(t.note), ""});
    if (out.size() > first)
      out[first].html_figure = communication_heat_map_svg(*record.communication, record.job.ranks);
  }
  if (record.mpi_t)
    for (mpi_t_table& t : mpi_t_tables(*record.mpi_t))
      out.push_back({std::move(t.title), t.headed, std::move(t.rows), std::move(t.note), ""});
  return out;
}

// ---- text ----

// Control characters from a record must not drive the reader's terminal (ESC sequences,
// C1 controls as UTF-8, carriage returns that overwrite a line).
std::string terminal_safe(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (c < 0x20 || c == 0x7F)
      out += fmt::format("\\x{:02x}", c);
    else if (c == 0xC2 && next >= 0x80 && next <= 0x9F)
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[++i]));
    else
      out += text[i];
  }
  return out;
}

std::string render_text(const std::vector<section>& report) {
  std::string out;
  for (const section& s : report) {
    out += (out.empty() ? "" : "\n") + s.title + "\n";
    table safe = s.rows;
    std::vector<size_t> widths;
    for (auto& row : safe)
      for (size_t i = 0; i < row.size(); ++i) {
        row[i] = terminal_safe(row[i]);
        widths.resize(std::max(widths.size(), row.size()));
        widths[i] = std::max(widths[i], row[i].size());
      }
    for (const auto& row : safe) {
      std::string line = " ";
      for (size_t i = 0; i < row.size(); ++i) {
        if (i == 0 || !s.headed)
          line += i + 1 == row.size() ? "  " + row[i] : fmt::format(" {:<{}}", row[i], widths[i]);
        else
          line += fmt::format("  {:>{}}", row[i], widths[i]);
      }
      out += line + "\n";
    }
    if (!s.note.empty())
      out += "  " + s.note + "\n";
  }
  return out;
}

// ---- csv ----

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos)
    return std::string(text);
  std::string out = "\"";
  for (char c : text)
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string render_csv(const job_record& record, const model::machine_model* model) {
  std::string out = "routine,calls,time_s,percent_of_mpi,us_per_call,bytes_sent,bytes_received,"
                    "bytes_per_call,min_s,max_s,imbalance,imbalance_rank";
  out += model != nullptr ? ",latency_s,transfer_s,sync_s\r\n" : "\r\n";
  const auto number = [](const std::optional<double>& value) {
    return value ? fmt::format("{}", *value) : "";
  };
  for (const routine_row& row : routine_rows(record, model)) {
    const routine& r = *row.measured;
    // A routine counted without timing has empty time cells, not zeros.
    const auto timed = [&r](double value) {
      return r.timed.value ? fmt::format("{}", value) : std::string();
    };
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}", csv_field(r.name), r.calls,
                       timed(r.time_s), number(row.percent_of_mpi), number(row.us_per_call),
                       r.bytes_sent, r.bytes_received, number(row.bytes_per_call), timed(r.min_s),
                       timed(r.max_s), number(row.imbalance), r.per_rank.time_s.max_rank);
    if (model != nullptr)
      for (double time_split::*part :
           {&time_split::latency_s, &time_split::transfer_s, &time_split::sync_s})
        out += "," + (row.split ? fmt::format("{}", (*row.split).*part) : "");
    out += "\r\n";
  }
  return out;
}

// ---- html ----

// The report's style, rule by rule, so that a page showing the report among its own content
// can scope every rule to the report (render_html_fragment). "body" is the report itself.
struct style_rule {
  std::string_view selectors, declarations; // selectors separated by ","
};
constexpr std::array<style_rule, 11> html_style = {{
    {"body", "font-family:system-ui,sans-serif;margin:2em;color:#222"},
    {"h1", "font-size:1.4em"},
    {"h2", "font-size:1.1em;margin-top:1.6em"},
    {"table", "border-collapse:collapse"},
    {"td,th", "padding:.2em .7em"},
    {".facts th", "text-align:left"},
    {".facts:first-of-type tr:first-child td", "font-size:1.3em;font-weight:bold"},
    {".figures td,.figures th", "text-align:right"},
    {".figures tr>:first-child", "text-align:left"},
    {".figures tr:nth-child(even)", "background:#f3f3f3"},
    {".figures th", "border-bottom:1px solid #999"},
}};

// The style sheet; with a `scope` (".report"), every selector is put under it and "body" is
// the scope itself, so that none of the rules reaches the page around the report.
std::string style_sheet(std::string_view scope) {
  std::string out;
  const auto add = [&](const style_rule& rule) {
    std::string_view rest = rule.selectors;
    for (bool first = true; !rest.empty(); first = false) {
      const size_t comma = rest.find(',');
      const std::string_view one = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      out += first ? "" : ",";
      if (scope.empty())
        out += one;
      else if (one == "body")
        out += scope;
      else
        out += fmt::format("{} {}", scope, one);
    }
    out += fmt::format("{{{}}}", rule.declarations);
  };
  for (const style_rule& rule : html_style)
    add(rule);
  return out;
}

// The report's sections: what the page and the fragment hold.
std::string html_sections(const std::vector<section>& report, heat_map map) {
  std::string out;
  for (const section& s : report) {
    const char* heading = &s == &report.front() ? "h1" : "h2";
    out += fmt::format("<{}>{}</{}>\n", heading, escape_markup(s.title), heading);
    out += s.headed ? "<table class=\"figures\">\n" : "<table class=\"facts\">\n";
    for (size_t row = 0; row < s.rows.size(); ++row) {
      out += "<tr>";
      for (size_t i = 0; i < s.rows[row].size(); ++i) {
        // Headings are the first row of a figures table and the first column of a facts one.
        const char* tag = (s.headed ? row == 0 : i == 0) ? "th" : "td";
        out += fmt::format("<{}>{}</{}>", tag, escape_markup(s.rows[row][i]), tag);
      }
      out += "</tr>\n";
    }
    out += "</table>\n";
    if (!s.note.empty())
      out += "<p>" + escape_markup(s.note) + "</p>\n";
    if (map == heat_map::drawn)
      out += s.html_figure;
  }
  return out;
}

std::string render_html(const job_record& record, const std::vector<section>& report) {
  return fmt::format("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
                     "charset=\"utf-8\">\n<title>Strata report: {}</title>\n"
                     "<style>\n{}\n</style>\n</head>\n<body>\n{}</body>\n</html>\n",
                     escape_markup(record.job.id), style_sheet(""),
                     html_sections(report, heat_map::drawn));
}

// Reads and parses one file; a message names the file.
template <typename Result>
bool load(const std::string& path, Result (*parse)(std::string_view), Result& result,
          std::string& error) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    error = fmt::format("{}: cannot open: {}", path, std::strerror(errno));
    return false;
  }
  std::string text;
  char buffer[65536];
  for (size_t n = 0; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;)
    text.append(buffer, n);
  const bool read_failed = std::ferror(file) != 0;
  std::fclose(file);
  if (read_failed) {
    error = path + ": cannot read";
    return false;
  }
  result = parse(text);
  if (!result.ok())
    error = path + ": " + result.error;
  return result.ok();
}

// The estimate needs the model's "routines" alone.
model::model_read_result read_routine_costs(std::string_view text) {
  return model::read_model(text, model::model_parts::routines);
}

} // namespace

std::optional<report_format> parse_format(std::string_view name) {
  const auto found = std::find(format_names.begin(), format_names.end(), name);
  if (found == format_names.end())
    return std::nullopt;
  return static_cast<report_format>(found - format_names.begin());
}

std::string render(const job_record& record, report_format format,
                   const model::machine_model* model) {
  switch (format) {
  case report_format::json:
    return to_json(record) + "\n";
  case report_format::csv:
    return render_csv(record, model);
  case report_format::html:
    return render_html(record, sections(record, model));
  case report_format::text:
    break;
  }
  std::string text = render_text(sections(record, model));
  // A recovered job that hung: strata hang's diagnosis, its lines made safe for a terminal like
  // the rest of the report.
  if (record.hang) {
    text += "\nWhy the job hung (strata hang, from the ranks' last states):\n";
    std::string_view rest = record.hang->text;
    for (size_t end; (end = rest.find('\n')) != std::string_view::npos; rest.remove_prefix(end + 1))
      text += terminal_safe(rest.substr(0, end)) + "\n";
    text += terminal_safe(rest);
  }
  return text;
}

std::string render_html_fragment(const job_record& record, const model::machine_model* model,
                                 heat_map map) {
  return fmt::format("<div class=\"report\"><style>{}</style>\n{}</div>", style_sheet(".report"),
                     html_sections(sections(record, model), map));
}

int report_main(const std::string& record_path, const std::string& format,
                const std::string& model_path, std::string& output, std::string& error) {
  const auto chosen = parse_format(format);
  if (!chosen) {
    error = fmt::format("unknown report format \"{}\" (expected text, json, csv or html)",
                        terminal_safe(format));
    return 2;
  }
  parse_result record;
  model::model_read_result model;
  if (!load(record_path, parse_record, record, error) ||
      (!model_path.empty() && !load(model_path, read_routine_costs, model, error)))
    return 2;
  output = render(*record.record, *chosen, model.ok() ? &*model.model : nullptr);
  return 0;
}

} // namespace strata::record
