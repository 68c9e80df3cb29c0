#include "profiler/record/record.hpp"
#include "profiler/record/record_reader.hpp"

#include "common/rank_ranges.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <utility>
#include <variant>

namespace strata::record {
namespace {

// Objects keep their keys in name order, as the profiler has always written the record.
using json = nlohmann::json;

using namespace detail;

// ---- Reading ----

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

// The reader's view of an nlohmann value (see detail::reader).
struct nlohmann_value {
  const json* v = nullptr;

  bool is_object() const { return v->is_object(); }
  bool is_array() const { return v->is_array(); }
  bool is_null() const { return v->is_null(); }
  std::optional<std::string_view> string() const {
    if (!v->is_string())
      return std::nullopt;
    return std::string_view(v->get_ref<const std::string&>());
  }
  std::optional<bool> boolean() const {
    return v->is_boolean() ? std::optional(v->get<bool>()) : std::nullopt;
  }
  std::optional<std::uint64_t> count() const {
    if (v->is_number_unsigned())
      return v->get<std::uint64_t>();
    if (v->is_number_integer() && v->get<std::int64_t>() >= 0)
      return v->get<std::int64_t>();
    if (v->is_number_float())
      return count_of_double(v->get<double>());
    return std::nullopt;
  }
  std::optional<double> number() const {
    return v->is_number() ? std::optional(v->get<double>()) : std::nullopt;
  }
  std::optional<std::int64_t> integer() const {
    if (v->is_number_integer() &&
        (!v->is_number_unsigned() || v->get<std::uint64_t>() <= INT64_MAX))
      return v->get<std::int64_t>();
    return std::nullopt;
  }
  bool member(std::string_view key, nlohmann_value& out) const {
    const auto it = v->find(key);
    if (it == v->end())
      return false;
    out.v = &*it;
    return true;
  }
  template <typename F> void members(F each) const {
    for (auto it = v->begin(); it != v->end(); ++it)
      if (!each(std::string_view(it.key()), nlohmann_value{&it.value()}))
        return;
  }
  template <typename F> void elements(F each) const {
    for (const json& item : *v)
      if (!each(nlohmann_value{&item}))
        return;
  }
  std::string describe() const { return record::describe(*v); }
};

template <typename T> std::optional<T> read_document(const json& doc, std::string& error) {
  reader<nlohmann_value> in;
  T out;
  in.read_root(nlohmann_value{&doc}, out);
  error = in.error;
  return error.empty() ? std::optional(std::move(out)) : std::nullopt;
}

// ---- Writing ----

// Figures left out of the record where their absence says the same.
template <typename T> bool left_out(const T&) {
  return false;
}
template <typename T> bool left_out(const std::optional<T>& value) {
  return !value.has_value();
}
// The abort code and the signal say "none" with null, as the record always has.
bool left_out(const std::optional<std::int64_t>&) {
  return false;
}
template <typename T, T when_absent> bool left_out(const defaulted<T, when_absent>& value) {
  return value.value == when_absent;
}
bool left_out(const std::map<std::string, counter>& counters) {
  return counters.empty();
}
bool left_out(const std::vector<callsite>& callsites) {
  return callsites.empty();
}
bool left_out(const std::vector<member_collectives>& members) {
  return members.empty();
}

// Declared up front: the container writers call back into the struct writer and vice versa.
template <has_fields S> json write(const S& value);
template <typename T> json write(const std::vector<T>& items);
template <typename T> json write(const std::map<std::string, T>& items);
json write(const std::vector<routine>& routines);

json write(const auto& value) {
  return value;
}
json write(const std::optional<std::int64_t>& value) {
  return value ? json(*value) : json(nullptr);
}
template <typename T> json write(const std::optional<T>& value) {
  return write(*value); // only written when present
}
json write(const pvar_number& number) {
  return std::visit([](auto v) { return json(v); }, number.value);
}
template <typename T, T when_absent> json write(const defaulted<T, when_absent>& value) {
  return value.value;
}
json write(job_status status) {
  return status_name(status);
}
json write(const histogram_bin& bin) {
  return {bin.key, bin.calls};
}

template <typename T> json write(const std::vector<T>& items) {
  json list = json::array();
  for (const T& item : items)
    list.push_back(write(item));
  return list;
}

template <typename T> json write(const std::map<std::string, T>& items) {
  json object = json::object();
  for (const auto& [key, item] : items)
    object[key] = write(item);
  return object;
}

template <has_fields S> json write(const S& value) {
  json object = json::object();
  const auto visit = [&object](std::string_view key, const auto& field) {
    if (!left_out(field))
      object[std::string(key)] = write(field);
  };
  fields(value, visit);
  return object;
}

json write(const std::vector<routine>& routines) {
  json object = json::object();
  for (const routine& r : routines)
    object[r.name] = write(r);
  return object;
}

// A communicator's members, sizes and ranks that fit each other and the job; "" when they do.
std::string communicator_error(const communicator_collectives& c, std::uint64_t ranks) {
  const std::optional<std::vector<common::rank_run>> runs =
      common::parse_rank_ranges(c.members, ranks);
  if (!runs)
    return fmt::format("members: expected ascending world ranks below job.ranks ({}) such as "
                       "\"0-7,16\", got \"{}\"",
                       ranks, printable(c.members, 40));
  const auto member = [&](std::uint64_t rank) {
    const auto after = std::upper_bound(
        runs->begin(), runs->end(), rank,
        [](std::uint64_t r, const common::rank_run& run) { return r < run.first; });
    return after != runs->begin() && rank <= std::prev(after)->last;
  };
  if (common::ranks_in(*runs) != c.size)
    return fmt::format("size: {} does not count the {} members", c.size, common::ranks_in(*runs));
  if (c.members_reported > c.size)
    return fmt::format("members_reported: {} is more than size ({})", c.members_reported, c.size);
  if (c.calls_min > c.calls_max)
    return "calls_min is more than calls_max";
  const member_bytes_spread& b = c.bytes_per_member;
  if (c.members_reported != 0 && (b.min > b.max || !member(b.min_rank) || !member(b.max_rank)))
    return "bytes_per_member: min above max, or its ranks not members";
  if (!c.per_member.empty()) {
    if (c.per_member.size() != c.members_reported)
      return fmt::format("per_member: {} entries for {} members reported", c.per_member.size(),
                         c.members_reported);
    for (size_t i = 0; i < c.per_member.size(); ++i) {
      const std::uint64_t rank = c.per_member[i].rank;
      if (!member(rank) || (i > 0 && rank <= c.per_member[i - 1].rank))
        return fmt::format("per_member[{}].rank: {} is not the next member", i, rank);
    }
  }
  return "";
}

std::string collectives_error(const collectives_section& section, std::uint64_t ranks) {
  for (size_t i = 0; i < section.communicators.size(); ++i)
    if (std::string e = communicator_error(section.communicators[i], ranks); !e.empty())
      return fmt::format("communication.collectives.communicators[{}].{}", i, e);
  return "";
}

} // namespace

std::string detail::range_error(const job_record& record) {
  const job_facts& job = record.job;
  if (job.ranks == 0)
    return "job.ranks: expected a positive integer, got 0";
  if (job.ranks_reported == 0 || job.ranks_reported > job.ranks)
    return fmt::format("job.ranks_reported: expected an integer from 1 to job.ranks ({}), got {}",
                       job.ranks, job.ranks_reported);
  if (job.module && *job.module != profile_module && *job.module != overhead_module)
    return fmt::format("job.module: expected profile or overhead, got {}", printable(*job.module));
  if (job.signal && *job.signal <= 0)
    return fmt::format("job.signal: expected a positive signal number or null, got {}",
                       *job.signal);
  if (job.clock) {
    if (std::find(clock_sources.begin(), clock_sources.end(), job.clock->source) ==
        clock_sources.end())
      return fmt::format("job.clock.source: expected one of tsc, monotonic, mixed, got \"{}\"",
                         printable(job.clock->source, 40));
    if (std::find(clock_statuses.begin(), clock_statuses.end(), job.clock->status) ==
        clock_statuses.end())
      return fmt::format("job.clock.status: expected one of ok, corrected, flagged, got \"{}\"",
                         printable(job.clock->status, 40));
  }
  // Paths are built only for a problem: this runs for every record a site ingests.
  const auto at = [](const routine& r) { return "routines." + printable(r.name); };
  for (const routine& r : record.routines) {
    for (size_t i = 0; i < r.size_histogram.size(); ++i) {
      const std::uint64_t bound = r.size_histogram[i].key;
      if ((bound & (bound - 1)) != 0)
        return fmt::format("{}.size_histogram[{}][0]: expected a bin lower bound (0 or a power "
                           "of 2), got {}",
                           at(r), i, bound);
    }
    for (size_t i = 0; i < r.comm_size_histogram.size(); ++i)
      if (r.comm_size_histogram[i].key == 0)
        return fmt::format("{}.comm_size_histogram[{}][0]: expected a communicator size (1 or "
                           "more), got 0",
                           at(r), i);
    // Unchecked, the sum in routine::bytes() could wrap and turn into nonsense rates.
    if (r.bytes_received > UINT64_MAX - r.bytes_sent)
      return at(r) + ": bytes_sent + bytes_received exceeds 2^64 - 1";
  }
  const auto rank_error = [&](const std::string& where, std::uint64_t rank) {
    return fmt::format("{}: expected a rank below job.ranks ({}), got {}", where, job.ranks, rank);
  };
  if (job.mpi_percent_by_rank.min_rank >= job.ranks)
    return rank_error("job.mpi_percent_by_rank.min_rank", job.mpi_percent_by_rank.min_rank);
  if (job.mpi_percent_by_rank.max_rank >= job.ranks)
    return rank_error("job.mpi_percent_by_rank.max_rank", job.mpi_percent_by_rank.max_rank);
  if (record.mpi_t)
    for (const mpi_t_pvar& p : record.mpi_t->pvars)
      if (p.ranks > job.ranks || (p.ranks > 0 && std::max(p.min_rank, p.max_rank) >= job.ranks))
        return fmt::format("mpi_t.pvars ({}): ranks {}, min_rank {}, max_rank {} do not fit "
                           "job.ranks ({})",
                           printable(p.name), p.ranks, p.min_rank, p.max_rank, job.ranks);
  if (record.communication) {
    const auto pairs_error = [&](const std::string& where,
                                 const std::vector<message_pair>& pairs) -> std::string {
      for (size_t i = 0; i < pairs.size(); ++i) {
        if (pairs[i].from >= job.ranks)
          return rank_error(fmt::format("{}[{}].from", where, i), pairs[i].from);
        if (pairs[i].to >= job.ranks)
          return rank_error(fmt::format("{}[{}].to", where, i), pairs[i].to);
      }
      return "";
    };
    if (std::string e = pairs_error("communication.pairs", record.communication->pairs); !e.empty())
      return e;
    for (const auto& [kind, pairs] : record.communication->by_kind)
      if (std::string e = pairs_error("communication.by_kind." + printable(kind, 40), pairs);
          !e.empty())
        return e;
    if (record.communication->collectives)
      if (std::string e = collectives_error(*record.communication->collectives, job.ranks);
          !e.empty())
        return e;
  }
  for (const routine& r : record.routines) {
    if (r.per_rank.calls.max_rank >= job.ranks)
      return rank_error(at(r) + ".per_rank.calls.max_rank", r.per_rank.calls.max_rank);
    if (r.per_rank.time_s.max_rank >= job.ranks)
      return rank_error(at(r) + ".per_rank.time_s.max_rank", r.per_rank.time_s.max_rank);
  }
  return "";
}

json part_json(const percent_spread& spread) {
  return write(spread);
}
json part_json(const rank_spread& spread) {
  return write(spread);
}
json part_json(const std::vector<histogram_bin>& histogram) {
  return write(histogram);
}

std::string_view status_name(job_status status) {
  return detail::status_names.at(static_cast<size_t>(status));
}

parse_result parse_record(std::string_view json_text) {
  parse_result result;
  if (const auto doc = common::parse_document(json_text, record_schema, describe, result.error))
    result.record = read_document<job_record>(*doc, result.error);
  if (result.record)
    result.error = detail::range_error(*result.record);
  if (!result.error.empty())
    result.record.reset();
  return result;
}

std::string to_json(const job_record& record) {
  json doc = write(record);
  doc["schema"] = std::string(record_schema);
  // The call sites and the calls they missed go together, or not at all.
  if (!record.callsites.empty() || record.callsites_dropped.value != 0) {
    doc["callsites"] = write(record.callsites);
    doc["callsites_dropped"] = record.callsites_dropped.value;
  }
  // `replace` because a record may hold invalid UTF-8 (argv and the environment may hold any
  // bytes), and dump must not throw.
  return doc.dump(1, ' ', false, json::error_handler_t::replace);
}

time_split split_time(const routine& measured, const model::routine_cost& model) {
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
