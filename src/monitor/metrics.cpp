#include "monitor/metrics.hpp"

#include "site/prometheus.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <vector>

namespace strata::monitor {
namespace {

using nlohmann::json;
using prometheus::family;
using prometheus::label;
using prometheus::metric_type;

// A round's events: the statistics and histogram filters' "events", the largest class of the
// classes filter, the raw filter's ranks summed.
json events_of(const json& round) {
  if (round.contains("events") && round["events"].is_object())
    return round["events"];
  if (round.contains("classes") && round["classes"].is_array() && !round["classes"].empty())
    return round["classes"][0].value("events", json::object());
  json sums = json::object();
  if (round.contains("profiles") && round["profiles"].is_array())
    for (const json& p : round["profiles"]) {
      const json rank_events = p.value("events", json::object());
      for (const auto& [name, e] : rank_events.items())
        for (const char* metric : {"calls", "time", "bytes"}) {
          json& s = sums[name][metric]["sum"];
          s = s.is_number() ? s.get<double>() + e.value(metric, 0.0) : e.value(metric, 0.0);
        }
    }
  return sums;
}

double sum_of(const json& event, const char* metric) {
  const json& m = event.value(metric, json::object());
  return m.is_object() && m.contains("sum") && m["sum"].is_number() ? m["sum"].get<double>() : 0.0;
}

} // namespace

std::string job_of_rounds_file(const std::string& path) {
  std::string name = path.substr(path.rfind('/') + 1);
  if (const size_t dot = name.rfind('.'); dot != std::string::npos && dot > 0)
    name.resize(dot);
  return name;
}

std::string monitor_metrics(const std::string& text, const std::string& job) {
  std::vector<json> rounds;
  size_t at = 0;
  for (size_t end = text.find('\n'); end != std::string::npos; end = text.find('\n', at)) {
    json round = json::parse(text.substr(at, end - at), nullptr, false);
    at = end + 1;
    if (round.is_object())
      rounds.push_back(std::move(round));
  }
  const label job_label{"job", job};
  std::vector<family> out;
  out.push_back({"strata_monitor_rounds_total",
                 "Complete rounds in the rounds file",
                 metric_type::counter,
                 {{"strata_monitor_rounds_total",
                   {job_label},
                   static_cast<double>(rounds.size()),
                   std::nullopt}}});
  if (rounds.empty())
    return prometheus::write_text(out);
  const json& last = rounds.back();
  const json* before = rounds.size() > 1 ? &rounds[rounds.size() - 2] : nullptr;
  const double ranks = last.value("ranks", 0.0), now = last.value("time", 0.0);
  const double interval = before != nullptr ? now - before->value("time", 0.0) : 0.0;
  const auto gauge = [&](const char* name, const char* help, double v) {
    out.push_back({name, help, metric_type::gauge, {{name, {job_label}, v, std::nullopt}}});
  };
  gauge("strata_monitor_ranks", "Ranks the latest round covers", ranks);
  gauge("strata_monitor_round_time_seconds",
        "When the front end completed the latest round (seconds since it started)", now);
  const json events = events_of(last);
  const json previous = before != nullptr ? events_of(*before) : json::object();
  family calls{
      "strata_monitor_calls_total", "Calls of each routine, all ranks", metric_type::counter, {}};
  family time{"strata_monitor_time_seconds_total",
              "Time in each routine, all ranks",
              metric_type::counter,
              {}};
  family bytes{
      "strata_monitor_bytes_total", "Bytes of each routine, all ranks", metric_type::counter, {}};
  family rate{"strata_monitor_call_rate",
              "Calls per second since the round before",
              metric_type::gauge,
              {}};
  family per_rank{"strata_monitor_time_per_rank_seconds",
                  "Each routine's time across the ranks",
                  metric_type::gauge,
                  {}};
  std::map<std::string, family> histograms;
  double mpi_time = 0, mpi_time_before = 0;
  for (const auto& [name, e] : events.items()) {
    const std::vector<label> labels = {job_label, {"routine", name}};
    calls.samples.push_back({calls.name, labels, sum_of(e, "calls"), std::nullopt});
    time.samples.push_back({time.name, labels, sum_of(e, "time"), std::nullopt});
    bytes.samples.push_back({bytes.name, labels, sum_of(e, "bytes"), std::nullopt});
    mpi_time += sum_of(e, "time");
    if (interval > 0) {
      const json& p = previous.value(name, json::object());
      rate.samples.push_back(
          {rate.name, labels, (sum_of(e, "calls") - sum_of(p, "calls")) / interval, std::nullopt});
    }
    const json& t = e.value("time", json::object());
    for (const char* stat : {"mean", "min", "max", "std"})
      if (t.is_object() && t.contains(stat) && t[stat].is_number())
        per_rank.samples.push_back({per_rank.name,
                                    {job_label, {"routine", name}, {"stat", stat}},
                                    t[stat].get<double>(),
                                    std::nullopt});
    // The histogram filter's bins: ranks per bin of [min, max], as cumulative buckets.
    const json& h = e.value("hist", json::object());
    if (h.is_object() && h.contains("bins") && h["bins"].is_array() && !h["bins"].empty()) {
      const std::string metric = h.value("metric", "time");
      const std::string base =
          "strata_monitor_rank_" + metric + (metric == "time" ? "_seconds" : "");
      family& f = histograms[base];
      f.name = base;
      f.help = "Ranks by their " + metric + " in each routine (the histogram filter's bins)";
      f.type = metric_type::histogram;
      const double lo = h.value("min", 0.0), hi = h.value("max", 0.0);
      const size_t n = h["bins"].size();
      double cumulative = 0;
      for (size_t k = 0; k < n; ++k) {
        cumulative += h["bins"][k].is_number() ? h["bins"][k].get<double>() : 0.0;
        if (k + 1 < n)
          f.samples.push_back(
              {base + "_bucket",
               {job_label,
                {"routine", name},
                {"le", json(lo + (hi - lo) * static_cast<double>(k + 1) / static_cast<double>(n))
                           .dump()}},
               cumulative,
               std::nullopt});
      }
      f.samples.push_back({base + "_bucket",
                           {job_label, {"routine", name}, {"le", "+Inf"}},
                           cumulative,
                           std::nullopt});
      f.samples.push_back({base + "_sum", labels, sum_of(e, metric.c_str()), std::nullopt});
      f.samples.push_back({base + "_count", labels, cumulative, std::nullopt});
    }
  }
  for (const auto& [name, e] : previous.items())
    mpi_time_before += sum_of(e, "time");
  out.push_back(std::move(calls));
  out.push_back(std::move(time));
  out.push_back(std::move(bytes));
  if (!rate.samples.empty())
    out.push_back(std::move(rate));
  if (!per_rank.samples.empty())
    out.push_back(std::move(per_rank));
  if (interval > 0 && ranks > 0)
    gauge("strata_monitor_mpi_percent", "Share of the ranks' time in MPI since the round before",
          100 * (mpi_time - mpi_time_before) / (interval * ranks));
  for (auto& [name, f] : histograms)
    out.push_back(std::move(f));
  if (last.contains("classes") && last["classes"].is_array()) {
    family classes{"strata_monitor_class_ranks",
                   "Ranks in each class of the classes filter",
                   metric_type::gauge,
                   {}};
    for (const json& c : last["classes"])
      classes.samples.push_back({classes.name,
                                 {job_label, {"class", c.value("id", std::string())}},
                                 c.value("ranks", 0.0),
                                 std::nullopt});
    out.push_back(std::move(classes));
  }
  return prometheus::write_text(out);
}

} // namespace strata::monitor
