#include "config/options.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace strata::config {

namespace {

// strtoll and friends need a terminated string; values are short.
template <typename T, typename F> std::optional<T> whole(std::string_view text, F convert) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) != 0)
    return std::nullopt;
  const std::string copy(text);
  errno = 0;
  char* end = nullptr;
  const T value = convert(copy.c_str(), &end);
  if (errno != 0 || end != copy.c_str() + copy.size())
    return std::nullopt;
  return value;
}

bool one_of(std::string_view value, std::string_view alternatives) {
  while (!alternatives.empty()) {
    const size_t bar = alternatives.find('|');
    if (alternatives.substr(0, bar) == value)
      return true;
    alternatives =
        bar == std::string_view::npos ? std::string_view() : alternatives.substr(bar + 1);
  }
  return false;
}

std::string quoted(std::string_view s) {
  std::string text = "'";
  text += s;
  text += "'";
  return text;
}

} // namespace

std::optional<int64_t> parse_int(std::string_view text) {
  return whole<int64_t>(text, [](const char* s, char** end) { return std::strtoll(s, end, 10); });
}

std::optional<uint64_t> parse_uint(std::string_view text) {
  if (!text.empty() && text[0] == '-')
    return std::nullopt;
  return whole<uint64_t>(text, [](const char* s, char** end) { return std::strtoull(s, end, 10); });
}

std::optional<double> parse_double(std::string_view text) {
  auto v = whole<double>(text, [](const char* s, char** end) { return std::strtod(s, end); });
  if (v && !std::isfinite(*v))
    return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(std::string_view text) {
  for (std::string_view yes : {"1", "true", "yes", "on"})
    if (text == yes)
      return true;
  for (std::string_view no : {"0", "false", "no", "off"})
    if (text == no)
      return false;
  return std::nullopt;
}

std::optional<uint64_t> parse_size(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) != 0)
    ++digits;
  const auto number = parse_uint(text.substr(0, digits));
  if (!number)
    return std::nullopt;
  const std::string_view unit = text.substr(digits);
  unsigned shift = 0;
  if (unit == "k" || unit == "K" || unit == "KiB")
    shift = 10;
  else if (unit == "m" || unit == "M" || unit == "MiB")
    shift = 20;
  else if (unit == "g" || unit == "G" || unit == "GiB")
    shift = 30;
  else if (!unit.empty())
    return std::nullopt;
  if (*number > (UINT64_MAX >> shift))
    return std::nullopt;
  return *number << shift;
}

std::optional<double> parse_duration(std::string_view text) {
  size_t split = text.size();
  while (split > 0 && std::isalpha(static_cast<unsigned char>(text[split - 1])) != 0)
    --split;
  const auto number = parse_double(text.substr(0, split));
  if (!number || *number < 0)
    return std::nullopt;
  const std::string_view unit = text.substr(split);
  double scale = 1;
  if (unit == "ns")
    scale = 1e-9;
  else if (unit == "us")
    scale = 1e-6;
  else if (unit == "ms")
    scale = 1e-3;
  else if (unit == "m" || unit == "min")
    scale = 60;
  else if (unit == "h")
    scale = 3600;
  else if (!unit.empty() && unit != "s")
    return std::nullopt;
  return *number * scale;
}

std::string type_problem(std::string_view type, std::string_view value) {
  if (type == "int")
    return parse_int(value) ? "" : "is not a whole number";
  if (type == "uint")
    return parse_uint(value) ? "" : "is not a whole number >= 0";
  if (type == "double")
    return parse_double(value) ? "" : "is not a number";
  if (type == "bool")
    return parse_bool(value) ? "" : "is not one of 1, 0, true, false, yes, no, on, off";
  if (type == "size")
    return parse_size(value) ? "" : "is not a size such as 4096, 512K, 64M or 2G";
  if (type == "duration")
    return parse_duration(value) ? "" : "is not a duration such as 2.5, 10s, 250ms or 40us";
  if (type.starts_with("enum:")) {
    const std::string_view alternatives = type.substr(5);
    if (one_of(value, alternatives))
      return "";
    std::string list(alternatives);
    for (char& c : list)
      if (c == '|')
        c = ',';
    return "is not one of " + list;
  }
  return ""; // string, list: any text
}

std::string option_variable(std::string_view module, std::string_view key) {
  std::string name = "STRATA_";
  for (std::string_view part : {module, std::string_view("_"), key})
    for (char c : part)
      name += std::isalnum(static_cast<unsigned char>(c)) != 0
                  ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                  : '_';
  return name;
}

resolved_options resolve_options(std::string_view module, const std::vector<option_decl>& declared,
                                 const std::vector<std::pair<std::string, std::string>>& given,
                                 const getenv_fn& getenv) {
  resolved_options out;
  const std::string who = "module " + quoted(module);
  for (const auto& [key, value] : given) {
    bool known = false;
    for (const option_decl& d : declared)
      known = known || d.key == key;
    if (!known) {
      std::string keys;
      for (const option_decl& d : declared)
        keys += (keys.empty() ? "" : ", ") + d.key;
      out.error = who + ": unknown option " + quoted(key) +
                  (keys.empty() ? std::string(" (it takes none)") : " (its options: " + keys + ")");
      return out;
    }
  }
  for (const option_decl& d : declared) {
    std::optional<std::string> value;
    std::string source;
    for (const auto& [key, v] : given)
      if (key == d.key) {
        value = v; // the last one given wins, as on a command line
        source = "option " + quoted(d.key);
      }
    std::vector<std::string> variables{option_variable(module, d.key)};
    variables.insert(variables.end(), d.env.begin(), d.env.end());
    for (const std::string& variable : variables) {
      if (value)
        break;
      const char* v = getenv(variable.c_str());
      if (v != nullptr && *v != '\0') {
        value = v;
        source = variable;
      }
    }
    if (!value && d.default_value) {
      value = *d.default_value;
      source = "default of option " + quoted(d.key);
    }
    if (!value)
      continue;
    if (const std::string problem = type_problem(d.type, *value); !problem.empty()) {
      out.error = who + ": " + source + ": " + quoted(*value) + " " + problem;
      return out;
    }
    out.values.emplace_back(d.key, *value);
  }
  return out;
}

} // namespace strata::config
