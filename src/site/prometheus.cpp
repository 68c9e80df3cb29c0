#include "site/prometheus.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace strata::prometheus {
namespace {

std::string escape(std::string_view text, bool quotes) {
  std::string out;
  for (const char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && quotes)
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v); // shortest text that reads back the same
  return std::string(buf, r.ptr);
}

bool name_char(char c, bool first, bool colon) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  return alpha || (colon && c == ':') || (!first && c >= '0' && c <= '9');
}

bool valid_name(std::string_view name, bool colon) {
  if (name.empty())
    return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (!name_char(name[i], i == 0, colon))
      return false;
  return true;
}

std::optional<metric_type> type_of(std::string_view text) {
  for (const metric_type t : {metric_type::counter, metric_type::gauge, metric_type::histogram,
                              metric_type::summary, metric_type::untyped})
    if (type_name(t) == text)
      return t;
  return std::nullopt;
}

std::optional<double> parse_value(std::string_view text) {
  if (text == "NaN")
    return std::nan("");
  if (text == "+Inf" || text == "Inf")
    return INFINITY;
  if (text == "-Inf")
    return -INFINITY;
  double v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size())
    return std::nullopt;
  return v;
}

// The family a sample name belongs to: a histogram's or summary's suffixes belong to its name.
std::string family_of(const std::string& name, const std::map<std::string, metric_type>& types) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string_view s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      std::string base = name.substr(0, name.size() - s.size());
      const auto it = types.find(base);
      if (it != types.end() && (it->second == metric_type::histogram ||
                                (it->second == metric_type::summary && s != "_bucket")))
        return base;
    }
  }
  return name;
}

class reader {
public:
  explicit reader(std::string_view text) : text_(text) {}

  parse_result run() {
    parse_result out;
    if (!text_.empty() && text_.back() != '\n')
      return fail(out, count_lines(), "the text does not end with a newline");
    size_t at = 0;
    int line_no = 0;
    while (at < text_.size()) {
      const size_t end = text_.find('\n', at);
      const std::string_view line = text_.substr(at, end - at);
      at = end + 1;
      ++line_no;
      std::string why = line.empty() ? "" : line[0] == '#' ? comment(line) : sample_line(line);
      if (!why.empty())
        return fail(out, line_no, why);
    }
    if (std::string why = check_families(); !why.empty())
      return fail(out, line_no, why);
    out.families = std::move(families_);
    return out;
  }

private:
  parse_result fail(parse_result& out, int line, const std::string& why) {
    out.families.clear();
    out.error = "line " + std::to_string(line) + ": " + why;
    return out;
  }
  int count_lines() const {
    return static_cast<int>(std::count(text_.begin(), text_.end(), '\n')) + 1;
  }

  // A family by name, opened where first seen; reopening one after another began is an error.
  family* open(const std::string& name, std::string& why) {
    if (!families_.empty() && families_.back().name == name)
      return &families_.back();
    if (seen_.count(name) != 0) {
      why = "the lines of " + name + " are not together";
      return nullptr;
    }
    seen_.insert(name);
    families_.push_back({name, "", metric_type::untyped, {}});
    return &families_.back();
  }

  std::string comment(std::string_view line) {
    // "# HELP name text" and "# TYPE name type"; any other comment is ignored.
    if (line.size() < 7 || line.substr(0, 2) != "# ")
      return {};
    const std::string_view keyword = line.substr(2, 5);
    if (keyword != "HELP " && keyword != "TYPE ")
      return {};
    std::string_view rest = line.substr(7);
    const size_t space = rest.find(' ');
    const std::string name(rest.substr(0, space));
    if (!valid_metric_name(name))
      return "\"" + name + "\" is not a metric name";
    const std::string_view value = space == std::string_view::npos ? "" : rest.substr(space + 1);
    std::string why;
    family* f = open(name, why);
    if (f == nullptr)
      return why;
    if (keyword == "HELP ") {
      if (helped_.count(name) != 0)
        return "a second HELP for " + name;
      helped_.insert(name);
      std::string help;
      for (size_t i = 0; i < value.size(); ++i) {
        if (value[i] == '\\' && i + 1 < value.size() &&
            (value[i + 1] == '\\' || value[i + 1] == 'n')) {
          help += value[i + 1] == 'n' ? '\n' : '\\';
          ++i;
        } else {
          help += value[i];
        }
      }
      f->help = help;
      return {};
    }
    if (typed_.count(name) != 0)
      return "a second TYPE for " + name;
    if (!f->samples.empty())
      return "the TYPE of " + name + " comes after its samples";
    const auto t = type_of(value);
    if (!t)
      return "\"" + std::string(value) + "\" is not a metric type";
    typed_.insert(name);
    f->type = *t;
    types_[name] = *t;
    return {};
  }

  std::string sample_line(std::string_view line) {
    sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ' && line[i] != '\t')
      ++i;
    s.name = std::string(line.substr(0, i));
    if (!valid_metric_name(s.name))
      return "\"" + s.name + "\" is not a metric name";
    if (i < line.size() && line[i] == '{') {
      ++i;
      std::set<std::string> names;
      for (;;) {
        while (i < line.size() && line[i] == ' ')
          ++i;
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        size_t start = i;
        while (i < line.size() && line[i] != '=' && line[i] != ' ')
          ++i;
        const std::string name(line.substr(start, i - start));
        if (!valid_label_name(name) || name.rfind("__", 0) == 0)
          return "\"" + name + "\" is not a label name";
        if (!names.insert(name).second)
          return "label " + name + " twice";
        if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"')
          return "label " + name + " has no quoted value";
        i += 2;
        std::string value;
        for (;; ++i) {
          if (i >= line.size())
            return "the value of label " + name + " does not end";
          if (line[i] == '"')
            break;
          if (line[i] == '\\') {
            if (i + 1 >= line.size())
              return "the value of label " + name + " does not end";
            const char e = line[++i];
            if (e != '\\' && e != '"' && e != 'n')
              return "label " + name + ": \\" + std::string(1, e) + " is not an escape";
            value += e == 'n' ? '\n' : e;
          } else {
            value += line[i];
          }
        }
        ++i;
        s.labels.push_back({name, value});
        if (i < line.size() && line[i] == ',')
          ++i;
        else if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        } else
          return "labels of " + s.name + " are not separated by commas";
      }
    }
    if (i >= line.size() || (line[i] != ' ' && line[i] != '\t'))
      return s.name + " has no value";
    std::string_view rest = line.substr(i);
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t'))
      rest.remove_prefix(1);
    const size_t gap = rest.find(' ');
    const auto value = parse_value(rest.substr(0, gap));
    if (!value)
      return "\"" + std::string(rest.substr(0, gap)) + "\" is not a value";
    s.value = *value;
    if (gap != std::string_view::npos) {
      std::string_view ts = rest.substr(gap + 1);
      std::int64_t t = 0;
      const auto r = std::from_chars(ts.data(), ts.data() + ts.size(), t);
      if (r.ec != std::errc() || r.ptr != ts.data() + ts.size())
        return "\"" + std::string(ts) + "\" is not a timestamp";
      s.timestamp_ms = t;
    }
    const std::string base = family_of(s.name, types_);
    std::string why;
    family* f = open(base, why);
    if (f == nullptr)
      return why;
    std::vector<label> key = s.labels;
    std::sort(key.begin(), key.end(),
              [](const label& a, const label& b) { return a.name < b.name; });
    std::string series = s.name;
    for (const label& l : key)
      series += '\0' + l.name + '\0' + l.value;
    if (!series_.insert(series).second)
      return "the series " + s.name + " appears twice";
    if (f->type == metric_type::counter && !(s.value >= 0))
      return "counter " + s.name + " is negative or NaN";
    f->samples.push_back(std::move(s));
    return {};
  }

  // Histograms: per label set (le aside) buckets non-decreasing in le, ending at +Inf with
  // the _count.
  std::string check_families() const {
    for (const family& f : families_) {
      if (f.type != metric_type::histogram)
        continue;
      std::map<std::string, std::vector<std::pair<double, double>>> buckets;
      std::map<std::string, double> counts;
      for (const sample& s : f.samples) {
        std::string key;
        std::optional<double> le;
        for (const label& l : s.labels)
          if (l.name == "le")
            le = parse_value(l.value);
          else
            key += l.name + '=' + l.value + ',';
        if (s.name == f.name + "_bucket") {
          if (!le)
            return "bucket of " + f.name + " without a valid le";
          buckets[key].emplace_back(*le, s.value);
        } else if (s.name == f.name + "_count") {
          counts[key] = s.value;
        }
      }
      for (auto& [key, b] : buckets) {
        std::sort(b.begin(), b.end());
        for (size_t k = 1; k < b.size(); ++k)
          if (b[k].second < b[k - 1].second)
            return "buckets of " + f.name + " are not cumulative";
        if (b.empty() || !std::isinf(b.back().first))
          return "histogram " + f.name + " has no +Inf bucket";
        const auto c = counts.find(key);
        if (c == counts.end() || c->second != b.back().second)
          return "histogram " + f.name + ": the +Inf bucket is not the _count";
      }
    }
    return {};
  }

  std::string_view text_;
  std::vector<family> families_;
  std::set<std::string> seen_, helped_, typed_, series_;
  std::map<std::string, metric_type> types_;
};

} // namespace

std::string_view type_name(metric_type t) {
  switch (t) {
  case metric_type::counter:
    return "counter";
  case metric_type::gauge:
    return "gauge";
  case metric_type::histogram:
    return "histogram";
  case metric_type::summary:
    return "summary";
  case metric_type::untyped:
    break;
  }
  return "untyped";
}

bool valid_metric_name(std::string_view name) {
  return valid_name(name, true);
}

bool valid_label_name(std::string_view name) {
  return valid_name(name, false);
}

std::string write_text(const std::vector<family>& families) {
  std::string out;
  for (const family& f : families) {
    if (!f.help.empty())
      out += "# HELP " + f.name + " " + escape(f.help, false) + "\n";
    out += "# TYPE " + f.name + " " + std::string(type_name(f.type)) + "\n";
    for (const sample& s : f.samples) {
      out += s.name;
      if (!s.labels.empty()) {
        out += '{';
        for (size_t i = 0; i < s.labels.size(); ++i)
          out += (i == 0 ? "" : ",") + s.labels[i].name + "=\"" + escape(s.labels[i].value, true) +
                 "\"";
        out += '}';
      }
      out += " " + number(s.value);
      if (s.timestamp_ms)
        out += " " + std::to_string(*s.timestamp_ms);
      out += "\n";
    }
  }
  return out;
}

parse_result parse_text(std::string_view text) {
  return reader(text).run();
}

family single(std::string name, std::string help, metric_type type, double value) {
  family f{name, std::move(help), type, {}};
  f.samples.push_back({std::move(name), {}, value, std::nullopt});
  return f;
}

} // namespace strata::prometheus
