#include "config/option_binder.hpp"

#include "config/options.hpp"

#include <strata/module.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>

namespace strata::config {

struct option_binder::table {
  std::vector<strata_option> declarations;
  std::deque<std::string> types; // "enum:a|b" texts the declarations point into
  strata_module_options list{};
};

namespace {

std::string in_quotes(std::string_view s) {
  std::string text = "'";
  text += s;
  text += "'";
  return text;
}

// Numbers in messages as people write them: 1000000, 0.5, 1e+06 only when long.
std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", v);
  return text;
}

// Commas between the names, none empty: "a+b,,c" -> "a,b,c".
std::string names_of_list(std::string_view value) {
  std::string out;
  std::string item;
  for (const char c : std::string(value) + ",") {
    if (c != ',' && c != '+') {
      item += c;
    } else if (!item.empty()) {
      out += (out.empty() ? "" : ",") + item;
      item.clear();
    }
  }
  return out;
}

} // namespace

std::optional<std::uint64_t> bound_uint(std::string_view value, std::uint64_t min,
                                        std::uint64_t max, std::string& problem) {
  const std::optional<std::uint64_t> n = parse_uint(value);
  if (n && *n >= min && *n <= max)
    return n;
  problem = max == UINT64_MAX ? "is not a whole number of at least " + std::to_string(min)
                              : "is not from " + std::to_string(min) + " to " + std::to_string(max);
  return std::nullopt;
}

std::optional<std::int64_t> bound_int(std::string_view value, std::int64_t min, std::int64_t max,
                                      std::string& problem) {
  const std::optional<std::int64_t> n = parse_int(value);
  if (n && *n >= min && *n <= max)
    return n;
  problem = "is not a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  return std::nullopt;
}

option_binder::option_binder() : table_(std::make_shared<table>()) {}

option_binder& option_binder::add(const char* key, const char* type, const char* default_value,
                                  const char* help, const char* env, binding b) {
  table_->declarations.push_back({key, type, default_value, help, env});
  // The default is written here only: the field starts from it.
  if (default_value != nullptr) {
    if (const std::string problem = b.set(default_value);
        !problem.empty() && default_problem_.empty())
      default_problem_ =
          "default of option " + in_quotes(key) + ": " + in_quotes(default_value) + " " + problem;
  }
  bindings_.push_back(std::move(b));
  return *this;
}

option_binder& option_binder::add_bool(const char* key, bool& field, const char* default_value,
                                       const char* help, const char* env) {
  return add(key, "bool", default_value, help, env,
             {[&field](std::string_view value) -> std::string {
                const std::optional<bool> on = parse_bool(value);
                if (!on)
                  return type_problem("bool", value);
                field = *on;
                return {};
              },
              [&field] { return field ? 1.0 : 0.0; }});
}

option_binder& option_binder::add_string(const char* key, std::string& field,
                                         const char* default_value, const char* help,
                                         const char* env) {
  return add(key, "string", default_value, help, env,
             {[&field](std::string_view value) -> std::string {
                field = value;
                return {};
              },
              {}});
}

option_binder& option_binder::add_list(const char* key, std::string& field,
                                       const char* default_value, const char* help,
                                       const char* env) {
  binding b{[&field](std::string_view value) -> std::string {
              field = names_of_list(value);
              return {};
            },
            {}};
  b.list = true;
  return add(key, "list", default_value, help, env, std::move(b));
}

option_binder& option_binder::add_list(const char* key, std::vector<std::string>& field,
                                       const char* default_value, const char* help,
                                       const char* env) {
  binding b{[&field](std::string_view value) -> std::string {
              field.clear();
              const std::string names = names_of_list(value);
              for (std::size_t at = 0; at < names.size();) {
                const std::size_t comma = std::min(names.find(',', at), names.size());
                field.push_back(names.substr(at, comma - at));
                at = comma + 1;
              }
              return {};
            },
            {}};
  b.list = true;
  return add(key, "list", default_value, help, env, std::move(b));
}

option_binder& option_binder::add_duration(const char* key, double& seconds,
                                           const char* default_value, const char* help,
                                           double max_s, const char* env) {
  return add_duration_in(key, seconds, default_value, help, 0, max_s, 1, env);
}

option_binder& option_binder::add_duration_ms(const char* key, double& seconds,
                                              const char* default_value, const char* help,
                                              double min_s, double max_s, const char* env) {
  return add_duration_in(key, seconds, default_value, help, min_s, max_s, 1e-3, env);
}

option_binder& option_binder::add_duration_in(const char* key, double& seconds,
                                              const char* default_value, const char* help,
                                              double min_s, double max_s, double bare_unit_s,
                                              const char* env) {
  return add(key, "duration", default_value, help, env,
             {[&seconds, min_s, max_s, bare_unit_s](std::string_view value) -> std::string {
                std::optional<double> s = parse_duration(value);
                if (!s)
                  return type_problem("duration", value);
                // A bare number: parse_duration read it as seconds.
                if (!value.empty() && std::isalpha(static_cast<unsigned char>(value.back())) == 0)
                  *s *= bare_unit_s;
                if (*s < min_s || *s > max_s) {
                  if (min_s <= 0)
                    return "is not a duration up to " + number_text(max_s) + " s";
                  if (max_s == std::numeric_limits<double>::infinity())
                    return "is not a duration of at least " + number_text(min_s) + " s";
                  return "is not a duration from " + number_text(min_s) + " to " +
                         number_text(max_s) + " s";
                }
                seconds = *s;
                return {};
              },
              [&seconds] { return seconds; }});
}

option_binder& option_binder::add_size(const char* key, std::uint64_t& bytes,
                                       const char* default_value, const char* help,
                                       std::uint64_t min, std::uint64_t max, const char* env) {
  return add(key, "size", default_value, help, env,
             {[&bytes, min, max](std::string_view value) -> std::string {
                const std::optional<std::uint64_t> n = parse_size(value);
                if (!n)
                  return type_problem("size", value);
                if (*n < min || *n > max)
                  return max == UINT64_MAX ? "is not a size of at least " + std::to_string(min) +
                                                 (min == 1 ? " byte" : " bytes")
                                           : "is not a size from " + std::to_string(min) + " to " +
                                                 std::to_string(max) + " bytes";
                bytes = *n;
                return {};
              },
              [&bytes] { return static_cast<double>(bytes); }});
}

option_binder& option_binder::add_choice(const char* key, const char* default_value,
                                         const char* help, const char* env,
                                         const std::vector<const char*>& names,
                                         std::function<void(std::size_t)> set) {
  std::string type = "enum:";
  for (const char* name : names)
    type += std::string(type.size() > 5 ? "|" : "") + name;
  const std::string& kept = table_->types.emplace_back(std::move(type));
  return add(key, kept.c_str(), default_value, help, env,
             {[names, set = std::move(set), &kept](std::string_view value) -> std::string {
                for (std::size_t at = 0; at < names.size(); ++at)
                  if (value == names[at]) {
                    set(at);
                    return {};
                  }
                return type_problem(kept, value);
              },
              {}});
}

option_binder& option_binder::add_enum(const char* key, std::string& field,
                                       const char* default_value, const char* help,
                                       std::initializer_list<const char*> names, const char* env) {
  const std::vector<const char*> list(names);
  return add_choice(key, default_value, help, env, list,
                    [&field, list](std::size_t at) { field = list[at]; });
}

option_binder& option_binder::add_passed_on(const char* key, const char* type,
                                            std::map<std::string, std::string>& into,
                                            const char* help) {
  const std::string name = key;
  return add(key, type, nullptr, help, nullptr,
             {[&into, name, type](std::string_view value) -> std::string {
                if (std::string problem = type_problem(type, value); !problem.empty())
                  return problem;
                into[name] = value;
                return {};
              },
              {}});
}

option_binder& option_binder::not_empty() {
  if (!bindings_.empty())
    bindings_.back().not_empty = true;
  return *this;
}

option_binder& option_binder::require_more(const char* key, const char* than, const char* words) {
  orderings_.push_back({index_of(key), index_of(than), words});
  return *this;
}

std::size_t option_binder::index_of(std::string_view key) const {
  std::size_t at = 0;
  const std::vector<strata_option>& declared = table_->declarations;
  while (at < declared.size() && key != declared[at].key)
    ++at;
  return at;
}

const strata_module_options* option_binder::declared() {
  table_->list = {sizeof(strata_module_options), static_cast<int>(table_->declarations.size()),
                  table_->declarations.data()};
  return &table_->list;
}

std::string option_binder::take_one(std::size_t at, std::string_view value) const {
  const binding& b = bindings_[at];
  std::string problem;
  if (b.not_empty && (b.list ? names_of_list(value).empty() : value.empty()))
    problem = b.list ? "is not a list of one name or more" : "is empty";
  else
    problem = b.set(value);
  if (problem.empty())
    return {};
  return "option " + in_quotes(table_->declarations[at].key) + ": " + in_quotes(value) + " " +
         problem;
}

std::string
option_binder::take(const std::vector<std::pair<std::string, std::string>>& values) const {
  if (!default_problem_.empty())
    return default_problem_;
  const std::vector<strata_option>& declared = table_->declarations;
  // The text each option's value came from, for the checks between options.
  std::vector<std::optional<std::string>> text(declared.size());
  for (std::size_t at = 0; at < declared.size(); ++at)
    if (declared[at].default_value != nullptr)
      text[at] = declared[at].default_value;
  for (const auto& [key, value] : values) {
    const std::size_t at = index_of(key);
    if (at == declared.size())
      return "unknown option " + in_quotes(key);
    if (std::string problem = take_one(at, value); !problem.empty())
      return problem;
    text[at] = value;
  }
  for (const ordering& o : orderings_) {
    if (o.key >= declared.size() || o.than >= declared.size() || !text[o.key] ||
        !bindings_[o.key].number || !bindings_[o.than].number)
      continue;
    const double value = bindings_[o.key].number();
    const double than = bindings_[o.than].number();
    if (value > than)
      continue;
    const std::string than_text = text[o.than] ? *text[o.than] : number_text(than);
    return "option " + in_quotes(declared[o.key].key) + ": " + in_quotes(*text[o.key]) +
           " is not " + o.words + " option " + in_quotes(declared[o.than].key) + " (" +
           in_quotes(than_text) + ")";
  }
  return {};
}

std::vector<std::pair<std::string, std::string>> argument_list(const strata_module_arg* args,
                                                               int nargs) {
  std::vector<std::pair<std::string, std::string>> values;
  values.reserve(static_cast<std::size_t>(std::max(nargs, 0)));
  for (int i = 0; i < nargs; ++i)
    values.emplace_back(args[i].key != nullptr ? args[i].key : "",
                        args[i].value != nullptr ? args[i].value : "");
  return values;
}

std::string option_binder::take(const strata_module_arg* args, int nargs) const {
  return take(argument_list(args, nargs));
}

} // namespace strata::config
