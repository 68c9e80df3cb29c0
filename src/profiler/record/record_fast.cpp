#include "profiler/record/record_fast.hpp"

#include "profiler/record/record_reader.hpp"

#include <climits>
#include <nlohmann/json.hpp>
#include <simdjson.h>

namespace strata::record {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// The reader's view of a simdjson value (see detail::reader).
struct simdjson_value {
  element e;
  static constexpr bool scans_for_members = true; // member() walks the object

  element_type type() const { return e.type(); }
  bool is_object() const { return type() == element_type::OBJECT; }
  bool is_array() const { return type() == element_type::ARRAY; }
  bool is_null() const { return type() == element_type::NULL_VALUE; }
  std::optional<std::string_view> string() const {
    std::string_view s;
    return e.get_string().get(s) == simdjson::SUCCESS ? std::optional(s) : std::nullopt;
  }
  std::optional<bool> boolean() const {
    bool b = false;
    return e.get_bool().get(b) == simdjson::SUCCESS ? std::optional(b) : std::nullopt;
  }
  std::optional<std::uint64_t> count() const {
    switch (type()) {
    case element_type::UINT64:
      return e.get_uint64().value_unsafe();
    case element_type::INT64: {
      const std::int64_t v = e.get_int64().value_unsafe();
      return v >= 0 ? std::optional(static_cast<std::uint64_t>(v)) : std::nullopt;
    }
    case element_type::DOUBLE:
      return detail::count_of_double(e.get_double().value_unsafe());
    default:
      return std::nullopt;
    }
  }
  std::optional<double> number() const {
    switch (type()) {
    case element_type::UINT64:
      return static_cast<double>(e.get_uint64().value_unsafe());
    case element_type::INT64:
      return static_cast<double>(e.get_int64().value_unsafe());
    case element_type::DOUBLE:
      return e.get_double().value_unsafe();
    default:
      return std::nullopt;
    }
  }
  // UINT64 holds only integers beyond int64's range.
  std::optional<std::int64_t> integer() const {
    if (type() == element_type::INT64)
      return e.get_int64().value_unsafe();
    return std::nullopt;
  }
  // The last member of that name, as nlohmann keeps it.
  bool member(std::string_view key, simdjson_value& out) const {
    bool found = false;
    const simdjson::dom::object object = e.get_object().value_unsafe();
    for (const auto field : object)
      if (field.key == key) {
        out.e = field.value;
        found = true;
      }
    return found;
  }
  template <typename F> void members(F each) const {
    const simdjson::dom::object object = e.get_object().value_unsafe();
    for (const auto field : object)
      if (!each(field.key, simdjson_value{field.value}))
        return;
  }
  template <typename F> void elements(F each) const {
    const simdjson::dom::array array = e.get_array().value_unsafe();
    for (const element item : array)
      if (!each(simdjson_value{item}))
        return;
  }
  // Messages of this reader are never shown (parse_record redoes a refused record): scalars
  // as nlohmann prints them, containers only named.
  std::string describe() const {
    if (is_object())
      return "an object";
    if (is_array())
      return "an array";
    nlohmann::json v;
    if (const auto s = string())
      v = std::string(*s);
    else if (const auto b = boolean())
      v = *b;
    else if (type() == element_type::UINT64)
      v = e.get_uint64().value_unsafe();
    else if (type() == element_type::INT64)
      v = e.get_int64().value_unsafe();
    else if (type() == element_type::DOUBLE)
      v = e.get_double().value_unsafe();
    return detail::printable(v.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace), 40);
  }
};

} // namespace

namespace {

std::optional<job_record> read_simdjson(std::string_view json_text,
                                        std::vector<cvar_view>* cvar_views) {
  // Unicode escapes (backslash-u) are where the two parsers could differ (lone surrogates);
  // records rarely hold any, so a text with one goes to the reference reader.
  if (json_text.find("\\u") != std::string_view::npos)
    return std::nullopt;
  thread_local simdjson::dom::parser parser;
  element doc;
  // The text is copied into a padded buffer (simdjson reads in 64-byte blocks).
  if (parser.parse(json_text.data(), json_text.size(), true).get(doc) != simdjson::SUCCESS)
    return std::nullopt;
  const simdjson_value root{doc};
  simdjson_value schema;
  if (!root.is_object() || !root.member("schema", schema) ||
      schema.string() != std::optional(record_schema))
    return std::nullopt;
  detail::reader<simdjson_value> in;
  in.cvar_views = cvar_views;
  std::optional<job_record> out(std::in_place);
  in.read_root(root, *out);
  if (!in.error.empty() || !detail::range_error(*out).empty())
    return std::nullopt;
  return out;
}

} // namespace

std::optional<job_record> read_record_simdjson(std::string_view json_text) {
  return read_simdjson(json_text, nullptr);
}

std::optional<job_record> read_record_simdjson_lean(std::string_view json_text,
                                                    std::vector<cvar_view>& cvars) {
  cvars.clear();
  auto out = read_simdjson(json_text, &cvars);
  if (!out)
    cvars.clear();
  return out;
}

lean_parse_result parse_record_lean(std::string_view json_text) {
  lean_parse_result result;
  result.parsed.record = read_record_simdjson_lean(json_text, result.cvars);
  if (result.parsed.record)
    return result;
  result.parsed = parse_record(json_text);
  if (result.parsed.ok() && result.parsed.record->mpi_t)
    for (const auto& [name, value] : result.parsed.record->mpi_t->cvars)
      result.cvars.emplace_back(name, value);
  return result;
}

parse_result parse_record_fast(std::string_view json_text) {
  parse_result result;
  result.record = read_record_simdjson(json_text);
  // Anything refused, and the few texts simdjson reads otherwise, get the reference's answer.
  return result.record ? result : parse_record(json_text);
}

} // namespace strata::record
