#include "record.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <utility>

namespace strata::record {
namespace {

using json = nlohmann::json;
using out_json = nlohmann::ordered_json; // keeps the documented key order for people reading

constexpr std::array<std::string_view, 4> status_names = {"finalized", "aborted", "signal", "exit"};

// ---- One key list per struct, shared by the reader and the writer so they cannot drift ----

template <typename S, typename T>
concept either_const = std::same_as<std::remove_const_t<S>, T>;

template <either_const<rank_spread> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("min", s.min);
  visit("mean", s.mean);
  visit("max", s.max);
  visit("max_rank", s.max_rank);
}

template <either_const<percent_spread> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("min", s.min);
  visit("mean", s.mean);
  visit("max", s.max);
  visit("min_rank", s.min_rank);
  visit("max_rank", s.max_rank);
}

template <either_const<counter> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("unit", s.unit);
  visit("in_mpi", s.in_mpi);
  visit("outside_mpi", s.outside_mpi);
}

template <either_const<per_rank_figures> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("calls", s.calls);
  visit("time_s", s.time_s);
}

// The name is the routine's key in "routines", not a field.
template <either_const<routine> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("calls", s.calls);
  visit("time_s", s.time_s);
  visit("min_s", s.min_s);
  visit("max_s", s.max_s);
  visit("count_sum", s.count_sum);
  visit("bytes_sent", s.bytes_sent);
  visit("bytes_received", s.bytes_received);
  visit("size_histogram", s.size_histogram);
  visit("comm_size_histogram", s.comm_size_histogram);
  visit("per_rank", s.per_rank);
  visit("timed", s.timed);
}

template <either_const<job_facts> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("id", s.id);
  visit("resource_manager", s.resource_manager);
  visit("ranks", s.ranks);
  visit("ranks_reported", s.ranks_reported);
  visit("hosts", s.hosts);
  visit("host_names", s.host_names);
  visit("user", s.user);
  visit("uid", s.uid);
  visit("executable", s.executable);
  visit("argv", s.argv);
  visit("mpi_flavor", s.mpi_flavor);
  visit("mpi_library", s.mpi_library);
  visit("language", s.language);
  visit("thread_level", s.thread_level);
  visit("pmpi_intercepted_by_application", s.pmpi_intercepted_by_application);
  visit("environment", s.environment);
  visit("start", s.start);
  visit("end", s.end);
  visit("status", s.status);
  visit("abort_code", s.abort_code);
  visit("signal", s.signal);
  visit("partial", s.partial);
  visit("wall_time_s", s.wall_time_s);
  visit("mpi_time_s", s.mpi_time_s);
  visit("mpi_percent", s.mpi_percent);
  visit("mpi_percent_by_rank", s.mpi_percent_by_rank);
  visit("profiler_overhead_s", s.profiler_overhead_s);
  visit("profiler_finalize_s", s.profiler_finalize_s);
  visit("counters", s.counters);
}

template <either_const<callsite> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("function", s.function);
  visit("file", s.file);
  visit("line", s.line);
  visit("caller", s.caller);
  visit("calls", s.calls);
  visit("time_s", s.time_s);
  visit("bytes", s.bytes);
  visit("wasted_s", s.wasted_s);
  visit("ranks", s.ranks);
}

template <either_const<job_record> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("job", s.job);
  visit("routines", s.routines);
  visit("callsites", s.callsites);
}

template <either_const<routine_model> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("latency_s", s.latency_s);
  visit("bytes_per_s", s.bytes_per_s);
}

template <either_const<machine_model> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("routines", s.routines);
}

struct ignore_fields {
  template <typename T> void operator()(std::string_view, T&) const {}
};
template <typename S>
concept has_fields = requires(S& s, ignore_fields& visit) {
  fields(s, visit);
};

// Keys a record may leave out; every other key is required.
template <typename T>
constexpr bool may_be_absent =
    std::same_as<T, std::optional<std::int64_t>> || std::same_as<T, std::optional<double>> ||
    std::same_as<T, std::vector<histogram_bin>> || std::same_as<T, std::vector<callsite>> ||
    std::same_as<T, std::map<std::string, counter>> || std::same_as<T, timed_flag>;

// ---- Reading ----

// Record text can hold anything; messages must stay one printable line of bounded length.
std::string printable(std::string_view text, size_t limit = 60) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    // Cut only at the start of a UTF-8 sequence so the message stays valid UTF-8.
    if (out.size() >= limit && (byte & 0xC0) != 0x80)
      return out + "...";
    out += byte < 0x20 || byte == 0x7F ? fmt::format("\\x{:02x}", byte) : std::string(1, c);
  }
  return out;
}

std::string describe(const json& value) {
  if (value.is_object())
    return "an object";
  // A short flat array is shown, a nested one only named: dump recurses, and nesting is what
  // a hostile record would use to exhaust the stack.
  if (value.is_array() &&
      (value.size() > 8 || std::any_of(value.begin(), value.end(),
                                       [](const json& item) { return item.is_structured(); })))
    return "an array";
  // ensure_ascii and `replace` keep the dump printable and stop it from throwing.
  return printable(value.dump(-1, ' ', true, json::error_handler_t::replace), 40);
}

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? printable(key) : path + "." + printable(key);
}

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

// Collects the first problem only: later problems are usually consequences of it.
class reader {
public:
  std::string error;

  template <typename T> void operator()(std::string_view key, T& out) {
    if (!error.empty())
      return;
    const auto it = object_->find(key);
    if (it == object_->end()) {
      if (!may_be_absent<T>)
        error = join(path_, key) + " is missing";
      return;
    }
    read(*it, join(path_, key), out);
  }

  template <has_fields S> void read(const json& value, const std::string& at, S& out) {
    if (!value.is_object())
      return fail(at, "an object", value);
    const json* outer_object = std::exchange(object_, &value);
    std::string outer_path = std::exchange(path_, at);
    fields(out, *this);
    object_ = outer_object;
    path_ = std::move(outer_path);
  }

private:
  const json* object_ = nullptr;
  std::string path_;

  void fail(const std::string& at, std::string_view expected, const json& got) {
    if (error.empty())
      error = fmt::format("{}: expected {}, got {}", at, expected, describe(got));
  }

  void read(const json& value, const std::string& at, std::uint64_t& out) {
    if (const auto count = as_count(value))
      out = *count;
    else
      fail(at, "a non-negative integer", value);
  }

  // Times, percentages and averages. JSON cannot say inf or nan, and an overflowing literal
  // such as 1e999 is refused by the parser already.
  void read(const json& value, const std::string& at, double& out) {
    if (value.is_number() && value.get<double>() >= 0)
      out = value.get<double>();
    else
      fail(at, "a non-negative number", value);
  }

  void read(const json& value, const std::string& at, std::string& out) {
    if (value.is_string())
      out = value.get<std::string>();
    else
      fail(at, "a string", value);
  }

  void read(const json& value, const std::string& at, bool& out) {
    if (value.is_boolean())
      out = value.get<bool>();
    else
      fail(at, "true or false", value);
  }

  void read(const json& value, const std::string& at, timed_flag& out) {
    read(value, at, out.value);
  }

  // Null and absent both mean "none": the writer emits null, a rebuilt record may omit it.
  void read(const json& value, const std::string& at, std::optional<std::int64_t>& out) {
    if (value.is_number_integer() &&
        (!value.is_number_unsigned() || value.get<std::uint64_t>() <= INT64_MAX))
      out = value.get<std::int64_t>();
    else if (!value.is_null())
      fail(at, "an integer or null", value);
  }

  void read(const json& value, const std::string& at, std::optional<double>& out) {
    if (value.is_null())
      return;
    double seconds = 0;
    read(value, at, seconds);
    out = seconds;
  }

  void read(const json& value, const std::string& at, job_status& out) {
    const auto found = value.is_string() ? std::find(status_names.begin(), status_names.end(),
                                                     value.get<std::string>())
                                         : status_names.end();
    if (found == status_names.end())
      return fail(at, "one of finalized, aborted, signal, exit", value);
    out = static_cast<job_status>(found - status_names.begin());
  }

  void read(const json& value, const std::string& at, histogram_bin& out) {
    const bool pair = value.is_array() && value.size() == 2;
    const auto key = pair ? as_count(value[0]) : std::nullopt;
    const auto calls = pair ? as_count(value[1]) : std::nullopt;
    if (!key || !calls)
      return fail(at, "a [bin, calls] pair of non-negative integers", value);
    out = {*key, *calls};
  }

  template <typename T> void read(const json& value, const std::string& at, std::vector<T>& out) {
    if (!value.is_array())
      return fail(at, "an array", value);
    for (size_t i = 0; i < value.size() && error.empty(); ++i)
      read(value[i], fmt::format("{}[{}]", at, i), out.emplace_back());
  }

  template <typename T>
  void read(const json& value, const std::string& at, std::map<std::string, T>& out) {
    if (!value.is_object())
      return fail(at, "an object", value);
    for (auto it = value.begin(); it != value.end() && error.empty(); ++it)
      read(it.value(), join(at, it.key()), out[it.key()]);
  }

  // "routines" is an object keyed by name; the model keeps the name in the routine.
  void read(const json& value, const std::string& at, std::vector<routine>& out) {
    std::map<std::string, routine> by_name;
    read(value, at, by_name);
    for (auto& [name, r] : by_name) {
      if (name.empty() && error.empty())
        error = at + ": a routine has an empty name";
      r.name = name;
      out.push_back(std::move(r));
    }
  }
};

// Ranges that depend on other fields, checked once the types are known to be right.
std::string range_error(const job_record& record) {
  const job_facts& job = record.job;
  if (job.ranks == 0)
    return "job.ranks: expected a positive integer, got 0";
  if (job.ranks_reported == 0 || job.ranks_reported > job.ranks)
    return fmt::format("job.ranks_reported: expected an integer from 1 to job.ranks ({}), got {}",
                       job.ranks, job.ranks_reported);
  if (job.signal && *job.signal <= 0)
    return fmt::format("job.signal: expected a positive signal number or null, got {}",
                       *job.signal);
  std::vector<std::pair<std::string, std::uint64_t>> ranks = {
      {"job.mpi_percent_by_rank.min_rank", job.mpi_percent_by_rank.min_rank},
      {"job.mpi_percent_by_rank.max_rank", job.mpi_percent_by_rank.max_rank}};
  for (const routine& r : record.routines) {
    const std::string at = join("routines", r.name);
    for (size_t i = 0; i < r.size_histogram.size(); ++i) {
      const std::uint64_t bound = r.size_histogram[i].key;
      if ((bound & (bound - 1)) != 0)
        return fmt::format("{}.size_histogram[{}][0]: expected a bin lower bound (0 or a power "
                           "of 2), got {}",
                           at, i, bound);
    }
    for (size_t i = 0; i < r.comm_size_histogram.size(); ++i)
      if (r.comm_size_histogram[i].key == 0)
        return fmt::format("{}.comm_size_histogram[{}][0]: expected a communicator size (1 or "
                           "more), got 0",
                           at, i);
    // Unchecked, the sum in routine::bytes() could wrap and turn into nonsense rates.
    if (r.bytes_received > UINT64_MAX - r.bytes_sent)
      return at + ": bytes_sent + bytes_received exceeds 2^64 - 1";
    ranks.emplace_back(at + ".per_rank.calls.max_rank", r.per_rank.calls.max_rank);
    ranks.emplace_back(at + ".per_rank.time_s.max_rank", r.per_rank.time_s.max_rank);
  }
  for (const auto& [at, rank] : ranks)
    if (rank >= job.ranks)
      return fmt::format("{}: expected a rank below job.ranks ({}), got {}", at, job.ranks, rank);
  return "";
}

// A JSON object whose "schema" is the one this code reads, checked before anything else so
// that a newer document is not blamed for a missing field.
std::optional<json> parse_document(std::string_view text, std::string_view schema,
                                   std::string& error) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    error = "not JSON: the text is empty";
    return std::nullopt;
  }
  json doc;
  try {
    doc = json::parse(text.data(), text.data() + text.size());
  } catch (const json::parse_error& e) {
    if (e.byte > text.size()) {
      error = fmt::format("not JSON: the text ends early at byte {} (truncated?)", text.size());
    } else {
      const std::string_view before = text.substr(0, e.byte - 1);
      const size_t line_start = before.rfind('\n'); // npos + 1 == 0 on the first line
      error = fmt::format("not JSON: syntax error at byte {} (line {}, column {})", e.byte,
                          1 + std::count(before.begin(), before.end(), '\n'),
                          e.byte - (line_start + 1));
    }
    return std::nullopt;
  } catch (const json::out_of_range&) {
    // nlohmann refuses a float literal beyond double's range this way.
    error = "not JSON: a number is out of range";
    return std::nullopt;
  } catch (const std::exception& e) {
    error = fmt::format("not JSON: {}", printable(e.what()));
    return std::nullopt;
  }
  const auto it = doc.is_object() ? doc.find("schema") : doc.end();
  if (!doc.is_object())
    error = fmt::format("top level: expected an object, got {}", describe(doc));
  else if (it == doc.end())
    error = fmt::format("schema is missing (expected \"{}\")", schema);
  else if (!it->is_string() || it->get<std::string>() != schema)
    error = fmt::format("schema is {}, this Strata reads {}", describe(*it), schema);
  return error.empty() ? std::optional(std::move(doc)) : std::nullopt;
}

template <typename T> std::optional<T> read_document(const json& doc, std::string& error) {
  reader in;
  T out;
  in.read(doc, "", out);
  error = in.error;
  return error.empty() ? std::optional(std::move(out)) : std::nullopt;
}

// ---- Writing ----

// Declared up front: the container writers call back into the struct writer and vice versa.
template <has_fields S> out_json write(const S& value);
template <typename T> out_json write(const std::vector<T>& items);
template <typename T> out_json write(const std::map<std::string, T>& items);
out_json write(const std::vector<routine>& routines);

out_json write(const auto& value) {
  return value;
}
out_json write(const std::optional<std::int64_t>& value) {
  return value ? out_json(*value) : out_json(nullptr);
}
out_json write(const std::optional<double>& value) {
  return value ? out_json(*value) : out_json(nullptr);
}
out_json write(const timed_flag& flag) {
  return flag.value;
}
out_json write(job_status status) {
  return status_name(status);
}
out_json write(const histogram_bin& bin) {
  return {bin.key, bin.calls};
}

template <typename T> out_json write(const std::vector<T>& items) {
  out_json list = out_json::array();
  for (const T& item : items)
    list.push_back(write(item));
  return list;
}

template <typename T> out_json write(const std::map<std::string, T>& items) {
  out_json object = out_json::object();
  for (const auto& [key, item] : items)
    object[key] = write(item);
  return object;
}

template <has_fields S> out_json write(const S& value) {
  out_json object = out_json::object();
  const auto visit = [&object](std::string_view key, const auto& field) {
    object[std::string(key)] = write(field);
  };
  fields(value, visit);
  return object;
}

out_json write(const std::vector<routine>& routines) {
  out_json object = out_json::object();
  for (const routine& r : routines)
    object[r.name] = write(r);
  return object;
}

} // namespace

std::string_view status_name(job_status status) {
  return status_names.at(static_cast<size_t>(status));
}

parse_result parse_record(std::string_view json_text) {
  parse_result result;
  if (const auto doc = parse_document(json_text, record_schema, result.error))
    result.record = read_document<job_record>(*doc, result.error);
  if (result.record)
    result.error = range_error(*result.record);
  if (!result.error.empty())
    result.record.reset();
  return result;
}

std::string to_json(const job_record& record) {
  out_json doc = {{"schema", record_schema}};
  doc.update(write(record));
  // `replace` because a record built in code may hold invalid UTF-8, and dump must not throw.
  return doc.dump(2, ' ', false, out_json::error_handler_t::replace) + "\n";
}

model_parse_result parse_model(std::string_view json_text) {
  model_parse_result result;
  if (const auto doc = parse_document(json_text, model_schema, result.error))
    result.model = read_document<machine_model>(*doc, result.error);
  // A zero bandwidth would make every transfer take forever.
  for (const auto& [name, m] : result.model ? result.model->routines : machine_model{}.routines)
    if (m.bytes_per_s <= 0 && result.error.empty())
      result.error = fmt::format("{}.bytes_per_s: expected a positive number, got {}",
                                 join("routines", name), m.bytes_per_s);
  if (!result.error.empty())
    result.model.reset();
  return result;
}

time_split split_time(const routine& measured, const routine_model& model) {
  const double time = std::max(0.0, measured.time_s);
  time_split split;
  split.latency_s = std::clamp(static_cast<double>(measured.calls) * model.latency_s, 0.0, time);
  const double transfer =
      model.bytes_per_s > 0 ? static_cast<double>(measured.bytes()) / model.bytes_per_s : 0.0;
  split.transfer_s = std::clamp(transfer, 0.0, time - split.latency_s);
  split.sync_s = time - split.latency_s - split.transfer_s;
  return split;
}

} // namespace strata::record
