#include "model/model_file.hpp"

#include "common/json_document.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

namespace strata::model {
namespace {

using json = nlohmann::json;
using out_json = nlohmann::ordered_json; // keeps the documented key order for people reading

constexpr double infinity = std::numeric_limits<double>::infinity();

using common::printable;

std::string describe(const json& value) {
  // Containers are only named: dump recurses, and nesting is what hostile input would use.
  if (value.is_object())
    return "an object";
  if (value.is_array())
    return "an array";
  // ensure_ascii and `replace` keep the dump printable and stop it from throwing.
  return printable(value.dump(-1, ' ', true, json::error_handler_t::replace), 40);
}

std::string number(double value) {
  return json(value).dump(); // shortest text that reads back to the same double
}

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? printable(key) : path + "." + printable(key);
}

// "0000-00-00T00:00:00" with 0 standing for any digit; zone and fractions may follow.
bool looks_like_iso_time(std::string_view text) {
  constexpr std::string_view shape = "0000-00-00T00:00:00";
  if (text.size() < shape.size())
    return false;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == '0' ? !(text[i] >= '0' && text[i] <= '9') : text[i] != shape[i])
      return false;
  return true;
}

struct range {
  double low, high;
  bool low_open, high_open;
  const char* expected;
  bool holds(double v) const {
    return (low_open ? v > low : v >= low) && (high_open ? v < high : v <= high);
  }
};
constexpr range non_negative{0, infinity, false, true, "a non-negative number"};
constexpr range positive{0, infinity, true, true, "a positive number"};
constexpr range probability{0, 1, false, false, "a number from 0 to 1"};
constexpr range inside_unit{0, 1, true, true, "a number between 0 and 1, exclusive"};

std::optional<std::uint64_t> as_count(const json& value) {
  if (value.is_number_unsigned())
    return value.get<std::uint64_t>();
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0)
    return value.get<std::int64_t>();
  // Writers that print integers through a double ("4e+06") stay readable while exact.
  if (value.is_number_float()) {
    const auto v = value.get<double>();
    if (v >= 0 && v <= 9007199254740992.0 && std::floor(v) == v)
      return static_cast<std::uint64_t>(v);
  }
  return std::nullopt;
}

// A JSON value and where it sits, for messages.
struct node {
  const json* value;
  std::string path;
};

// Collects the first problem only: later problems are usually consequences of it.
class reader {
public:
  std::string error;

  bool object(const node& at) {
    if (error.empty() && !at.value->is_object())
      fail(at.path, "an object", *at.value);
    return error.empty();
  }

  std::optional<node> child(const node& parent, std::string_view key) {
    if (!error.empty())
      return std::nullopt;
    const auto it = parent.value->find(key);
    if (it == parent.value->end()) {
      error = join(parent.path, key) + " is missing";
      return std::nullopt;
    }
    return node{&*it, join(parent.path, key)};
  }

  void get(const node& parent, std::string_view key, double& out, const range& allowed) {
    if (const auto at = child(parent, key)) {
      if (at->value->is_number() && allowed.holds(at->value->get<double>()))
        out = at->value->get<double>();
      else
        fail(at->path, allowed.expected, *at->value);
    }
  }

  // `least` is 0 or 1.
  void get(const node& parent, std::string_view key, std::uint64_t& out, std::uint64_t least) {
    if (const auto at = child(parent, key)) {
      if (const auto count = as_count(*at->value); count && *count >= least)
        out = *count;
      else
        fail(at->path, least == 0 ? "a non-negative integer" : "a positive integer", *at->value);
    }
  }

  void get(const node& parent, std::string_view key, std::string& out) {
    if (const auto at = child(parent, key)) {
      if (at->value->is_string())
        out = at->value->get<std::string>();
      else
        fail(at->path, "a string", *at->value);
    }
  }

  void get(const node& parent, std::string_view key, bool& out) {
    if (const auto at = child(parent, key)) {
      if (at->value->is_boolean())
        out = at->value->get<bool>();
      else
        fail(at->path, "true or false", *at->value);
    }
  }

  void fail(const std::string& at, std::string_view expected, const json& got) {
    if (error.empty())
      error = at + ": expected " + std::string(expected) + ", got " + describe(got);
  }

  void read(const node& at, machine_info& out) {
    if (!object(at))
      return;
    get(at, "host", out.host);
    get(at, "mpi", out.mpi);
    get(at, "ranks", out.ranks, 1);
    get(at, "created", out.created);
    if (error.empty() && !looks_like_iso_time(out.created))
      fail(at.path + ".created", "an ISO 8601 time such as 2024-05-01T12:00:00Z",
           json(out.created));
    get(at, "timer_resolution_s", out.timer_resolution_s, positive);
  }

  void read(const node& at, routine_cost& out) {
    if (!object(at))
      return;
    get(at, "latency_s", out.latency_s, non_negative);
    // A zero bandwidth would make every transfer take forever.
    get(at, "bytes_per_s", out.bytes_per_s, positive);
  }

  void read(const node& at, base_point& out) {
    if (!object(at))
      return;
    get(at, "p", out.p, 1);
    get(at, "b", out.b, 0);
    get(at, "n", out.n, 1);
    get(at, "min_s", out.min_s, non_negative);
    get(at, "mean_s", out.mean_s, non_negative);
    get(at, "median_s", out.median_s, non_negative);
    get(at, "max_s", out.max_s, non_negative);
    get(at, "model", out.model);
    if (error.empty() && out.model != "poisson" && out.model != "exponential" &&
        out.model != "none")
      fail(at.path + ".model", "poisson, exponential or none", json(out.model));
    get(at, "parameter", out.parameter, non_negative);
    get(at, "window_s", out.window_s, positive);
    get(at, "chi2", out.chi2, non_negative);
    get(at, "dof", out.dof, 0);
    get(at, "p_value", out.p_value, probability);
    get(at, "accepted", out.accepted);
    get(at, "t_max_s", out.t_max_s, non_negative);
    if (!error.empty())
      return;
    if (!(out.min_s <= out.median_s && out.median_s <= out.max_s))
      error = at.path + ": expected min_s <= median_s <= max_s, got " + number(out.min_s) + ", " +
              number(out.median_s) + ", " + number(out.max_s);
    else if (out.mean_s < out.min_s || out.mean_s > out.max_s)
      error = at.path + ": mean_s " + number(out.mean_s) + " lies outside [min_s, max_s]";
    else if (out.t_max_s < out.min_s)
      error = at.path + ": t_max_s " + number(out.t_max_s) + " is below min_s " + number(out.min_s);
  }

  void read(const node& at, std::vector<base_point>& out) {
    if (!object(at))
      return;
    const auto points = child(at, "points");
    if (!points)
      return;
    if (!points->value->is_array())
      return fail(points->path, "an array", *points->value);
    std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
    for (size_t i = 0; i < points->value->size() && error.empty(); ++i) {
      const node item{&(*points->value)[i], points->path + "[" + std::to_string(i) + "]"};
      base_point& point = out.emplace_back();
      read(item, point);
      if (error.empty() && !seen.insert({point.p, point.b}).second)
        error = item.path + ": a second point for p=" + std::to_string(point.p) +
                ", b=" + std::to_string(point.b);
    }
  }

  template <typename T> void read(const node& at, std::map<std::string, T>& out) {
    if (!object(at))
      return;
    for (auto it = at.value->begin(); it != at.value->end() && error.empty(); ++it) {
      if (it.key().empty())
        error = at.path + ": a name is empty";
      else
        read(node{&it.value(), join(at.path, it.key())}, out[it.key()]);
    }
  }

  void read(const node& root, machine_model& out, model_parts needed) {
    if (needed == model_parts::routines) {
      if (const auto routines = child(root, "routines"))
        read(*routines, out.routines);
      return;
    }
    if (const auto machine = child(root, "machine"))
      read(*machine, out.machine);
    if (const auto routines = child(root, "routines"))
      read(*routines, out.routines);
    if (const auto operations = child(root, "operations"))
      read(*operations, out.operations);
    get(root, "quantile", out.quantile, inside_unit);
    get(root, "partial", out.partial);
  }
};

out_json write(const base_point& point) {
  return {{"p", point.p},
          {"b", point.b},
          {"n", point.n},
          {"min_s", point.min_s},
          {"mean_s", point.mean_s},
          {"median_s", point.median_s},
          {"max_s", point.max_s},
          {"model", point.model},
          {"parameter", point.parameter},
          {"window_s", point.window_s},
          {"chi2", point.chi2},
          {"dof", point.dof},
          {"p_value", point.p_value},
          {"accepted", point.accepted},
          {"t_max_s", point.t_max_s}};
}

} // namespace

model_read_result read_model(std::string_view json_text, model_parts needed) {
  model_read_result result;
  if (const auto doc =
          common::parse_document(json_text, model_file_schema, describe, result.error)) {
    reader in;
    machine_model model;
    in.read(node{&*doc, ""}, model, needed);
    result.error = std::move(in.error);
    if (result.error.empty())
      result.model = std::move(model);
  }
  return result;
}

std::string write_model(const machine_model& model) {
  out_json doc = {{"schema", model_file_schema}};
  doc["machine"] = {{"host", model.machine.host},
                    {"mpi", model.machine.mpi},
                    {"ranks", model.machine.ranks},
                    {"created", model.machine.created},
                    {"timer_resolution_s", model.machine.timer_resolution_s}};
  doc["routines"] = out_json::object();
  for (const auto& [name, r] : model.routines)
    doc["routines"][name] = {{"latency_s", r.latency_s}, {"bytes_per_s", r.bytes_per_s}};
  doc["operations"] = out_json::object();
  for (const auto& [name, points] : model.operations) {
    out_json& list = doc["operations"][name]["points"] = out_json::array();
    for (const base_point& point : points)
      list.push_back(write(point));
  }
  doc["quantile"] = model.quantile;
  doc["partial"] = model.partial;
  // `replace` because a model built in code may hold invalid UTF-8, and dump must not throw.
  return doc.dump(2, ' ', false, out_json::error_handler_t::replace) + "\n";
}

} // namespace strata::model
