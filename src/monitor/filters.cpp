// The built-in filters (the TAU over MRNet paper, section 4): raw (no reduction), stats (phase A
// only), histogram (three phases) and classes (histograms per functional class), and the registry.
#include "monitor/filters.hpp"
#include "monitor/filter.hpp"
#include "monitor/wire.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <fnmatch.h>
#include <mutex>

namespace strata::overlay {

// ---- data ---------------------------------------------------------------------------------

void metric_stats::add(double v) {
  ++n;
  sum += v;
  sumsq += v * v;
  min = std::min(min, v);
  max = std::max(max, v);
}

void metric_stats::merge(const metric_stats& o) {
  n += o.n;
  sum += o.sum;
  sumsq += o.sumsq;
  min = std::min(min, o.min);
  max = std::max(max, o.max);
}

double metric_stats::stddev() const {
  if (n == 0)
    return 0;
  const double m = mean();
  const double var = sumsq / static_cast<double>(n) - m * m;
  return var > 0 ? std::sqrt(var) : 0;
}

std::string encode_classes(const class_table& t) {
  wire_writer w;
  w.u32(static_cast<uint32_t>(t.size()));
  for (const auto& [id, c] : t) {
    w.u64(id);
    w.u64(c.ranks);
    w.u32(static_cast<uint32_t>(c.rank_sample.size()));
    for (uint32_t r : c.rank_sample)
      w.u32(r);
    w.u32(static_cast<uint32_t>(c.events.size()));
    for (const auto& [name, e] : c.events) {
      w.str(name);
      for (const metric_stats& m : e.m) {
        w.u64(m.n);
        w.f64(m.sum);
        w.f64(m.sumsq);
        w.f64(m.min);
        w.f64(m.max);
      }
    }
  }
  return w.take();
}

class_table decode_classes(const std::string& bytes) {
  wire_reader r(bytes);
  class_table t;
  const uint32_t classes = r.count(8 + 8 + 4 + 4);
  for (uint32_t i = 0; i < classes; ++i) {
    const uint64_t id = r.u64();
    class_part& c = t[id];
    c.ranks = r.u64();
    const uint32_t samples = r.count(4);
    for (uint32_t s = 0; s < samples; ++s)
      c.rank_sample.push_back(r.u32());
    const uint32_t events = r.count(4 + metric_count * 40);
    for (uint32_t e = 0; e < events; ++e) {
      event_stats& es = c.events[r.str()];
      for (metric_stats& m : es.m) {
        m.n = r.u64();
        m.sum = r.f64();
        m.sumsq = r.f64();
        m.min = r.f64();
        m.max = r.f64();
      }
    }
  }
  if (!r.done())
    throw wire_error("trailing bytes after the classes");
  return t;
}

std::string encode_hists(const hist_table& t) {
  wire_writer w;
  w.u32(static_cast<uint32_t>(t.size()));
  for (const auto& [id, events] : t) {
    w.u64(id);
    w.u32(static_cast<uint32_t>(events.size()));
    for (const auto& [name, h] : events) {
      w.str(name);
      w.f64(h.lo);
      w.f64(h.hi);
      w.u32(static_cast<uint32_t>(h.bins.size()));
      for (uint64_t b : h.bins)
        w.u64(b);
    }
  }
  return w.take();
}

hist_table decode_hists(const std::string& bytes) {
  wire_reader r(bytes);
  hist_table t;
  const uint32_t classes = r.count(12);
  for (uint32_t i = 0; i < classes; ++i) {
    auto& events = t[r.u64()];
    const uint32_t n = r.count(4 + 20);
    for (uint32_t e = 0; e < n; ++e) {
      event_hist& h = events[r.str()];
      h.lo = r.f64();
      h.hi = r.f64();
      const uint32_t bins = r.count(8);
      h.bins.resize(bins);
      for (uint64_t& b : h.bins)
        b = r.u64();
    }
  }
  if (!r.done())
    throw wire_error("trailing bytes after the histograms");
  return t;
}

size_t bin_of(double v, double lo, double hi, size_t bins) {
  if (bins == 0)
    return 0;
  if (!(hi > lo) || !(v > lo)) // one value only, NaN, or at/below the bottom
    return 0;
  const double x = (v - lo) / (hi - lo) * static_cast<double>(bins);
  const size_t b = x >= static_cast<double>(bins) ? bins - 1 : static_cast<size_t>(x);
  return b;
}

uint64_t class_id(const rank_profile& p, const std::string& glob) {
  std::vector<const std::string*> names;
  for (const event_row& e : p.events)
    if (!e.name.starts_with("strata.") && // the monitor's own counters say nothing of the role
        (glob.empty() || ::fnmatch(glob.c_str(), e.name.c_str(), 0) == 0))
      names.push_back(&e.name);
  std::sort(names.begin(), names.end(),
            [](const std::string* a, const std::string* b) { return *a < *b; });
  uint64_t h = 1469598103934665603ull;
  for (const std::string* n : names) {
    for (unsigned char c : *n)
      h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull; // separator: {"ab"} differs from {"a","b"}
  }
  return h;
}

namespace {

// ---- raw: every profile goes up unchanged (the "ToM" curve without reduction) --------------

class raw_filter final : public filter {
public:
  const char* name() const override { return "raw"; }
  std::string leaf(const rank_profile& p) const override {
    wire_writer w;
    w.u32(1);
    w.str(encode_profile(p));
    return w.take();
  }
  std::string merge(const std::vector<std::string>& parts) const override {
    wire_writer w;
    uint32_t total = 0;
    std::string body;
    for (const std::string& part : parts) {
      wire_reader r(part);
      total += r.count(4);
      body.append(part, 4, std::string::npos);
    }
    w.u32(total);
    w.buffer() += body;
    return w.take();
  }
  std::string render(const std::string& root_a, const std::string*) const override {
    nlohmann::json profiles = nlohmann::json::array();
    wire_reader r(root_a);
    const uint32_t n = r.count(4);
    for (uint32_t i = 0; i < n; ++i) {
      const rank_profile p = decode_profile(r.str());
      nlohmann::json events = nlohmann::json::object();
      for (const event_row& e : p.events)
        events[e.name] = {
            {"calls", e.calls}, {"time", static_cast<double>(e.time_ns) / 1e9}, {"bytes", e.bytes}};
      profiles.push_back({{"rank", p.rank}, {"events", std::move(events)}});
    }
    std::sort(
        profiles.begin(), profiles.end(),
        [](const nlohmann::json& a, const nlohmann::json& b) { return a["rank"] < b["rank"]; });
    return nlohmann::json{{"profiles", std::move(profiles)}}.dump();
  }
};

// ---- stats, histogram, classes: one implementation, three configurations -----------------

enum class mode { stats, histogram, classes };

class class_filter final : public filter {
public:
  class_filter(mode m, size_t bins, int hist_metric, std::string class_glob)
      : mode_(m), bins_(bins), hist_metric_(hist_metric), class_glob_(std::move(class_glob)) {}

  const char* name() const override {
    return mode_ == mode::stats ? "stats" : mode_ == mode::histogram ? "histogram" : "classes";
  }
  bool three_phase() const override { return mode_ != mode::stats; }

  std::string leaf(const rank_profile& p) const override {
    class_table t;
    class_part& c = t[class_of(p)];
    c.ranks = 1;
    c.rank_sample.push_back(p.rank);
    for (const event_row& e : p.events) {
      event_stats& es = c.events[e.name];
      for (int m = 0; m < metric_count; ++m)
        es.m[m].add(metric_value(e, m));
    }
    return encode_classes(t);
  }

  std::string merge(const std::vector<std::string>& parts) const override {
    class_table out;
    for (const std::string& part : parts) {
      for (auto& [id, c] : decode_classes(part)) {
        class_part& into = out[id];
        into.ranks += c.ranks;
        into.rank_sample.insert(into.rank_sample.end(), c.rank_sample.begin(), c.rank_sample.end());
        std::sort(into.rank_sample.begin(), into.rank_sample.end());
        if (into.rank_sample.size() > class_part::sample_limit)
          into.rank_sample.resize(class_part::sample_limit);
        for (auto& [name, e] : c.events)
          for (int m = 0; m < metric_count; ++m)
            into.events[name].m[m].merge(e.m[m]);
      }
    }
    return encode_classes(out);
  }

  // The global min/max of the histogrammed metric, per class and event.
  std::string bounds(const std::string& root_a) const override {
    hist_table b;
    for (const auto& [id, c] : decode_classes(root_a))
      for (const auto& [name, e] : c.events)
        b[id][name] = event_hist{e.m[hist_metric_].min, e.m[hist_metric_].max, {}};
    return encode_hists(b);
  }

  std::string bin(const rank_profile& p, const std::string& bounds_bytes) const override {
    const hist_table b = decode_hists(bounds_bytes);
    const uint64_t id = class_of(p);
    hist_table out;
    auto cls = b.find(id);
    if (cls == b.end())
      return encode_hists(out);
    for (const event_row& e : p.events) {
      auto range = cls->second.find(e.name);
      if (range == cls->second.end())
        continue;
      event_hist h{range->second.lo, range->second.hi, std::vector<uint64_t>(bins_, 0)};
      ++h.bins[bin_of(metric_value(e, hist_metric_), h.lo, h.hi, bins_)];
      out[id][e.name] = std::move(h);
    }
    return encode_hists(out);
  }

  std::string merge_binned(const std::vector<std::string>& parts) const override {
    hist_table out;
    for (const std::string& part : parts) {
      for (auto& [id, events] : decode_hists(part)) {
        for (auto& [name, h] : events) {
          event_hist& into = out[id][name];
          if (into.bins.empty()) {
            into = std::move(h);
            continue;
          }
          for (size_t i = 0; i < into.bins.size() && i < h.bins.size(); ++i)
            into.bins[i] += h.bins[i];
        }
      }
    }
    return encode_hists(out);
  }

  std::string render(const std::string& root_a, const std::string* root_c) const override {
    const class_table classes = decode_classes(root_a);
    const hist_table hists = root_c != nullptr ? decode_hists(*root_c) : hist_table{};
    auto events_json = [&](uint64_t id, const class_part& c) {
      nlohmann::json events = nlohmann::json::object();
      for (const auto& [name, e] : c.events) {
        nlohmann::json ev{{"ranks", e.m[metric_calls].n}};
        for (int m = 0; m < metric_count; ++m)
          ev[metric_name(m)] = {{"sum", e.m[m].sum},
                                {"mean", e.m[m].mean()},
                                {"std", e.m[m].stddev()},
                                {"min", e.m[m].min},
                                {"max", e.m[m].max}};
        if (auto cls = hists.find(id); cls != hists.end()) {
          if (auto h = cls->second.find(name); h != cls->second.end())
            ev["hist"] = {{"metric", metric_name(hist_metric_)},
                          {"min", h->second.lo},
                          {"max", h->second.hi},
                          {"bins", h->second.bins}};
        }
        events[name] = std::move(ev);
      }
      return events;
    };
    if (mode_ != mode::classes) {
      if (classes.empty())
        return nlohmann::json{{"events", nlohmann::json::object()}}.dump();
      const auto& [id, c] = *classes.begin();
      return nlohmann::json{{"events", events_json(id, c)}}.dump();
    }
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [id, c] : classes) {
      char hex[17];
      std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(id));
      list.push_back({{"id", hex},
                      {"ranks", c.ranks},
                      {"rank_sample", c.rank_sample},
                      {"events", events_json(id, c)}});
    }
    // Largest class first: what a reader looks at.
    std::stable_sort(list.begin(), list.end(),
                     [](const nlohmann::json& a, const nlohmann::json& b) {
                       return a["ranks"].get<uint64_t>() > b["ranks"].get<uint64_t>();
                     });
    return nlohmann::json{{"class_events", class_glob_.empty() ? "*" : class_glob_},
                          {"classes", std::move(list)}}
        .dump();
  }

private:
  uint64_t class_of(const rank_profile& p) const {
    return mode_ == mode::classes ? class_id(p, class_glob_) : 0;
  }
  mode mode_;
  size_t bins_;
  int hist_metric_;
  std::string class_glob_;
};

std::string option(const filter_options& o, const std::string& key, const std::string& dflt) {
  auto it = o.find(key);
  return it == o.end() ? dflt : it->second;
}

std::unique_ptr<filter> make_class_filter(mode m, const filter_options& o, std::string& error) {
  const std::string bins_text = option(o, "bins", "10");
  char* end = nullptr;
  const long bins = std::strtol(bins_text.c_str(), &end, 10);
  if (end == bins_text.c_str() || *end != '\0' || bins < 1 || bins > 1000) {
    error = "bins: '" + bins_text + "' is not a number of bins from 1 to 1000";
    return nullptr;
  }
  const std::string metric_text = option(o, "metric", "time");
  const int metric = metric_from_name(metric_text);
  if (metric < 0) {
    error = "metric: '" + metric_text + "' is not one of calls, time, bytes";
    return nullptr;
  }
  std::string glob = option(o, "class-events", "");
  if (glob == "all" || glob == "*")
    glob.clear();
  else if (glob == "mpi")
    glob = "MPI_*";
  return std::make_unique<class_filter>(m, static_cast<size_t>(bins), metric, glob);
}

std::unique_ptr<filter> make_raw(const filter_options&, std::string&) {
  return std::make_unique<raw_filter>();
}
std::unique_ptr<filter> make_stats(const filter_options& o, std::string& e) {
  return make_class_filter(mode::stats, o, e);
}
std::unique_ptr<filter> make_histogram(const filter_options& o, std::string& e) {
  return make_class_filter(mode::histogram, o, e);
}
std::unique_ptr<filter> make_classes(const filter_options& o, std::string& e) {
  return make_class_filter(mode::classes, o, e);
}

// ---- the registry -------------------------------------------------------------------------

struct registry {
  std::mutex lock;
  std::vector<std::pair<std::string, filter_factory>> entries;
};

// Built on first use: no static constructors (init order against MPI_Init matters here).
registry& the_registry() {
  static registry* r = [] {
    auto* fresh = new registry();
    fresh->entries = {{"raw", make_raw},
                      {"stats", make_stats},
                      {"histogram", make_histogram},
                      {"classes", make_classes}};
    return fresh;
  }();
  return *r;
}

} // namespace

void register_filter(const std::string& name, filter_factory factory) {
  registry& r = the_registry();
  std::lock_guard<std::mutex> guard(r.lock);
  for (auto& [n, f] : r.entries) {
    if (n == name) {
      f = factory;
      return;
    }
  }
  r.entries.emplace_back(name, factory);
}

std::vector<std::string> filter_names() {
  registry& r = the_registry();
  std::lock_guard<std::mutex> guard(r.lock);
  std::vector<std::string> names;
  for (const auto& [n, f] : r.entries)
    names.push_back(n);
  return names;
}

std::unique_ptr<filter> make_filter(const std::string& name, const filter_options& options,
                                    std::string& error) {
  if (name.find('/') != std::string::npos || name.ends_with(".so")) {
    void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      error = "cannot load filter " + name + ": " + (why != nullptr ? why : "dlopen failed");
      return nullptr;
    }
    auto entry = reinterpret_cast<filter_factory_v1>(::dlsym(handle, STRATA_OVERLAY_FILTER_SYMBOL));
    if (entry == nullptr) {
      error = "filter " + name + " has no " STRATA_OVERLAY_FILTER_SYMBOL " symbol";
      return nullptr;
    }
    std::unique_ptr<filter> f(entry(&options, &error));
    if (f == nullptr && error.empty())
      error = "filter " + name + " refused its options";
    return f; // the plug-in stays loaded for the life of the process
  }
  filter_factory factory = nullptr;
  {
    registry& r = the_registry();
    std::lock_guard<std::mutex> guard(r.lock);
    for (const auto& [n, f] : r.entries)
      if (n == name)
        factory = f;
  }
  if (factory == nullptr) {
    std::string known;
    for (const std::string& n : filter_names())
      known += (known.empty() ? "" : ", ") + n;
    error = "unknown filter '" + name + "' (known: " + known + ", or a path to a plug-in .so)";
    return nullptr;
  }
  std::unique_ptr<filter> f = factory(options, error);
  if (f != nullptr)
    error.clear();
  return f;
}

} // namespace strata::overlay
