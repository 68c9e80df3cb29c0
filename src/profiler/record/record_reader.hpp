// Internal to the record readers: the key list of each struct (shared with the writer in
// record.cpp) and one reader over any JSON DOM, so that parse_record (nlohmann) and
// parse_record_fast (simdjson) accept the same documents and build the same values.
#pragma once

#include "common/json_document.hpp"
#include "profiler/record/record.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::record::detail {

inline constexpr std::array<std::string_view, 5> status_names = {"finalized", "aborted", "signal",
                                                                 "exit", "killed"};

// ---- One key list per struct, shared by the readers and the writer so they cannot drift ----

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

template <either_const<clock_facts> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("source", s.source);
  visit("kernel_clocksource", s.kernel_clocksource);
  visit("tsc_hz", s.tsc_hz);
  visit("rate_spread_ppm", s.rate_spread_ppm);
  visit("drift_ppm", s.drift_ppm);
  visit("offset_ns", s.offset_ns);
  visit("migrated", s.migrated);
  visit("status", s.status);
}

template <either_const<slurm_facts> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("job_id", s.job_id);
  visit("step", s.step);
  visit("cluster", s.cluster);
  visit("user", s.user);
  visit("account", s.account);
  visit("partition", s.partition);
  visit("qos", s.qos);
  visit("qos_unknown", s.qos_unknown);
  visit("nodes", s.nodes);
  visit("node_list", s.node_list);
  visit("tasks_per_node", s.tasks_per_node);
  visit("time_limit_s", s.time_limit_s);
  visit("ended_by_time_limit", s.ended_by_time_limit);
}

inline constexpr std::array<std::string_view, 3> clock_sources = {"tsc", "monotonic", "mixed"};
inline constexpr std::array<std::string_view, 3> clock_statuses = {"ok", "corrected", "flagged"};

template <either_const<job_facts> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("id", s.id);
  visit("module", s.module);
  visit("strata_version", s.strata_version);
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
  visit("exit_code", s.exit_code);
  visit("partial", s.partial);
  visit("wall_time_s", s.wall_time_s);
  visit("mpi_time_s", s.mpi_time_s);
  visit("mpi_percent", s.mpi_percent);
  visit("mpi_percent_by_rank", s.mpi_percent_by_rank);
  visit("profiler_overhead_s", s.profiler_overhead_s);
  visit("profiler_finalize_s", s.profiler_finalize_s);
  visit("poll_bytes_estimated", s.poll_bytes_estimated);
  visit("model_clamped_calls", s.model_clamped_calls);
  visit("counters", s.counters);
  visit("clock", s.clock);
  visit("slurm", s.slurm);
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

template <either_const<mpi_t_pvar> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("name", s.name);
  visit("description", s.description);
  visit("class", s.var_class);
  visit("binding", s.binding);
  visit("datatype", s.datatype);
  visit("elements", s.elements);
  visit("ranks", s.ranks);
  visit("unread", s.unread);
  visit("sum", s.sum);
  visit("min", s.min);
  visit("max", s.max);
  visit("min_rank", s.min_rank);
  visit("max_rank", s.max_rank);
}

template <either_const<mpi_t_section> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("problem", s.problem);
  visit("not_read", s.not_read);
  visit("pvars_exposed", s.pvars_exposed);
  visit("cvars_exposed", s.cvars_exposed);
  visit("events_exposed", s.events_exposed);
  visit("pvars", s.pvars);
  visit("cvars", s.cvars);
  visit("cvars_set", s.cvars_set);
}

template <either_const<message_pair> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("from", s.from);
  visit("to", s.to);
  visit("messages", s.messages);
  visit("bytes", s.bytes);
}

template <either_const<unlisted_pairs> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("pairs", s.pairs);
  visit("messages", s.messages);
  visit("bytes", s.bytes);
}

template <either_const<member_collectives> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("rank", s.rank);
  visit("calls", s.calls);
  visit("bytes", s.bytes);
}

template <either_const<member_bytes_spread> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("min", s.min);
  visit("mean", s.mean);
  visit("max", s.max);
  visit("min_rank", s.min_rank);
  visit("max_rank", s.max_rank);
}

template <either_const<communicator_collectives> S, typename Visit>
void fields(S& s, Visit& visit) {
  visit("members", s.members);
  visit("size", s.size);
  visit("members_reported", s.members_reported);
  visit("calls", s.calls);
  visit("bytes", s.bytes);
  visit("calls_min", s.calls_min);
  visit("calls_max", s.calls_max);
  visit("bytes_per_member", s.bytes_per_member);
  visit("per_member", s.per_member);
}

template <either_const<collective_sums> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("calls", s.calls);
  visit("bytes", s.bytes);
}

template <either_const<collectives_section> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("communicators", s.communicators);
  visit("unlisted", s.unlisted);
  visit("unattributed", s.unattributed);
}

template <either_const<communication_section> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("pairs", s.pairs);
  visit("by_kind", s.by_kind);
  visit("unlisted", s.unlisted);
  visit("collectives", s.collectives);
}

template <either_const<hang_diagnosis> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("verdict", s.verdict);
  visit("text", s.text);
}

template <either_const<job_record> S, typename Visit> void fields(S& s, Visit& visit) {
  visit("job", s.job);
  visit("routines", s.routines);
  visit("callsites", s.callsites);
  visit("callsites_dropped", s.callsites_dropped);
  visit("mpi_t", s.mpi_t);
  visit("communication", s.communication);
  visit("hang", s.hang);
}

struct ignore_fields {
  template <typename T> void operator()(std::string_view, T&) const {}
};
template <typename S>
concept has_fields = requires(S& s, ignore_fields& visit) {
  fields(s, visit);
};

template <typename T> inline constexpr bool is_defaulted = false;
template <typename T, T when_absent>
inline constexpr bool is_defaulted<defaulted<T, when_absent>> = true;
template <typename T> inline constexpr bool is_optional = false;
template <typename T> inline constexpr bool is_optional<std::optional<T>> = true;

// Keys a record may leave out; every other key is required.
template <typename T>
constexpr bool may_be_absent =
    is_optional<T> || is_defaulted<T> || std::same_as<T, std::vector<histogram_bin>> ||
    std::same_as<T, std::vector<callsite>> || std::same_as<T, std::map<std::string, counter>> ||
    std::same_as<T, std::vector<member_collectives>>;

// Record text can hold anything; messages must stay one printable line of bounded length.
using common::printable;

// Ranges that depend on other fields, checked once the types are known to be right; "" when
// all is well.
std::string range_error(const job_record& record);

// Writers that print integers through a double ("4e+06") stay readable while exact.
inline std::optional<std::uint64_t> count_of_double(double v) {
  if (v >= 0 && v <= 9007199254740992.0 && std::floor(v) == v)
    return static_cast<std::uint64_t>(v);
  return std::nullopt;
}

// Reads a document into the structs above through V, a cheap handle on one JSON value:
//   is_object() is_array() is_null()             the value's kind
//   string() boolean()                           optional<string_view>, optional<bool>
//   count()                                      a non-negative integer (or integral double)
//   number()                                     any number as a double
//   integer()                                    an integer literal that fits int64
//   member(key, out)                             false when absent; the last of a repeated key
//   members(f) elements(f)                       f(key, V) / f(V) until f returns false
//   describe()                                   the value for a message
//   scans_for_members (optional, any static)     member() walks the whole object: the reader
//                                                then takes each object's members in one pass
// Collects the first problem only: later problems are usually consequences of it. Paths of
// messages are built only when there is a problem.
template <typename V> class reader {
public:
  std::string error;
  // When set, mpi_t's control variables are not copied into the section's map but given here
  // as views of the document, for bulk readers that need them only as text (the document must
  // outlive them). Their names must come in strictly increasing order, as the writer puts
  // them (which also rules out a repeated name); otherwise that is an error, and the caller
  // reads the text the ordinary way.
  std::vector<cvar_view>* cvar_views = nullptr;

  reader() {
    if constexpr (one_pass) {
      slots_.reserve(256);
      present_.reserve(256);
    }
  }

  template <has_fields S> void read_root(const V& doc, S& out) { read(doc, out); }

  template <typename T> void operator()(std::string_view key, T& out) {
    V found;
    const bool present = take(key, found);
    if (!error.empty())
      return;
    push({key, 0, false});
    if (present)
      read(found, out);
    else if (!may_be_absent<T>)
      error = path() + " is missing";
    pop();
  }

private:
  struct segment {
    std::string_view key;
    size_t index;
    bool is_index;
  };
  V object_{};
  // The path of the value being read, for messages: pushed and popped for every field and
  // element, so a fixed array (records nest a few levels; deeper segments are not named).
  static constexpr size_t path_capacity = 16;
  std::array<segment, path_capacity> path_{};
  size_t depth_ = 0;
  void push(segment s) {
    if (depth_ < path_capacity)
      path_[depth_] = s;
    ++depth_;
  }
  void pop() { --depth_; }

  // Where member() walks the whole object, a struct of n fields looked up one by one cost n
  // walks (a sixth of the site ingest's parse). Instead each object's members are taken in
  // one walk into slots, one per key of the struct in fields() order, and the visit of
  // fields() takes them in that order. Writers put keys in name order (nlohmann's objects
  // are sorted), so each member's key is found by walking the struct's keys in name order
  // alongside, with a binary search for a key out of that order. A repeated key fills its
  // slot again: the last one counts, as with member().
  static constexpr bool one_pass = requires { V::scans_for_members; };
  struct struct_keys {
    std::vector<std::string_view> visited;                   // in fields() order
    std::vector<std::pair<std::string_view, size_t>> sorted; // by name: the key's slot
  };
  struct frame {
    size_t base = 0;              // the object's first slot in slots_
    const struct_keys* keys = {}; // its struct's keys
    size_t next = 0;              // the slot of the next key fields() visits
  };
  frame frame_{};
  std::vector<V> slots_;
  std::vector<char> present_;

  template <typename S> static const struct_keys& keys_of() {
    static const struct_keys keys = [] {
      struct_keys out;
      std::remove_const_t<S> unused{};
      auto collect = [&out](std::string_view key, auto&) {
        out.sorted.emplace_back(key, out.visited.size());
        out.visited.push_back(key);
      };
      fields(unused, collect);
      std::sort(out.sorted.begin(), out.sorted.end());
      return out;
    }();
    return keys;
  }

  template <typename S> void take_members(const V& value) {
    const struct_keys& keys = keys_of<S>();
    const auto& sorted = keys.sorted;
    frame_ = {slots_.size(), &keys, 0};
    // Both end at base here (read_object cuts them back): the new flags are all 0.
    slots_.resize(frame_.base + sorted.size());
    present_.resize(frame_.base + sorted.size(), 0);
    auto cursor = sorted.begin();
    value.members([&](std::string_view key, const V& item) {
      while (cursor != sorted.end() && cursor->first < key)
        ++cursor;
      if (cursor == sorted.end() || cursor->first != key) {
        const auto found = std::lower_bound(sorted.begin(), sorted.end(), key,
                                            [](const std::pair<std::string_view, size_t>& k,
                                               std::string_view v) { return k.first < v; });
        if (found == sorted.end() || found->first != key)
          return true; // a key the struct does not know is not read, as before
        cursor = found;
      }
      slots_[frame_.base + cursor->second] = item;
      present_[frame_.base + cursor->second] = 1;
      return true;
    });
  }

  // The current object's member `key`: false when absent.
  bool take(std::string_view key, V& found) {
    if constexpr (one_pass) {
      const size_t at = frame_.next++;
      assert(at < frame_.keys->visited.size() && frame_.keys->visited[at] == key);
      (void)key;
      if (present_[frame_.base + at] == 0)
        return false;
      found = slots_[frame_.base + at];
      return true;
    } else {
      return object_.member(key, found);
    }
  }

  std::string path() const {
    std::string out;
    for (const segment& s : std::span(path_).first(std::min(depth_, path_capacity))) {
      if (s.is_index) {
        out += fmt::format("[{}]", s.index);
      } else {
        if (!out.empty())
          out += '.';
        out += printable(s.key);
      }
    }
    return out;
  }

  void fail(std::string_view expected, const V& got) {
    if (error.empty())
      error = fmt::format("{}: expected {}, got {}", path(), expected, got.describe());
  }

  template <has_fields S> void read(V value, S& out) { read_object(value, out, *this); }

  // Visits mpi_t's keys as the reader does, but "cvars" into cvar_views.
  struct section_with_cvar_views {
    reader& in;
    template <typename T> void operator()(std::string_view key, T& out) {
      if constexpr (std::same_as<T, std::map<std::string, std::string>>)
        if (key == "cvars")
          return in.read_cvar_views(key);
      in(key, out);
    }
  };

  void read(V value, mpi_t_section& out) {
    if (cvar_views == nullptr)
      return read_object(value, out, *this);
    section_with_cvar_views visit{*this};
    read_object(value, out, visit);
  }

  // `value` by value and swapped in and out: GCC 12 takes an exchange through a reference for
  // a dangling pointer (-Wdangling-pointer).
  template <typename S, typename Visit> void read_object(V value, S& out, Visit& visit) {
    if (!value.is_object())
      return fail("an object", value);
    if constexpr (one_pass) {
      const frame outer = frame_;
      take_members<S>(value);
      fields(out, visit);
      slots_.resize(frame_.base);
      present_.resize(frame_.base);
      frame_ = outer;
    } else {
      std::swap(object_, value);
      fields(out, visit);
      std::swap(object_, value);
    }
  }

  void read_cvar_views(std::string_view key) {
    V found;
    const bool present = take(key, found);
    if (!error.empty())
      return;
    push({key, 0, false});
    if (!present)
      error = path() + " is missing";
    else if (!found.is_object())
      fail("an object", found);
    else
      found.members([&](std::string_view name, const V& item) {
        const auto text = item.string();
        if (!text) {
          push({name, 0, false});
          fail("a string", item);
          pop();
        } else if (!cvar_views->empty() && !(cvar_views->back().first < name)) {
          error = path() + ": names out of order";
        } else {
          cvar_views->emplace_back(name, *text);
        }
        return error.empty();
      });
    pop();
  }

  void read(const V& value, std::uint64_t& out) {
    if (const auto count = value.count())
      out = *count;
    else
      fail("a non-negative integer", value);
  }

  // Times, percentages and averages. JSON cannot say inf or nan, and an overflowing literal
  // such as 1e999 is refused by the parsers already.
  void read(const V& value, double& out) {
    if (const auto number = value.number(); number && *number >= 0)
      out = *number;
    else
      fail("a non-negative number", value);
  }

  void read(const V& value, std::string& out) {
    if (const auto text = value.string())
      out.assign(text->data(), text->size());
    else
      fail("a string", value);
  }

  void read(const V& value, bool& out) {
    if (const auto flag = value.boolean())
      out = *flag;
    else
      fail("true or false", value);
  }

  // Null and absent both mean "none": the writer emits null, a rebuilt record may omit it.
  void read(const V& value, std::optional<std::int64_t>& out) {
    if (const auto whole = value.integer())
      out = *whole;
    else if (!value.is_null())
      fail("an integer or null", value);
  }

  void read(const V& value, std::optional<double>& out) {
    if (value.is_null())
      return;
    double seconds = 0;
    read(value, seconds);
    out = seconds;
  }

  void read(const V& value, std::optional<std::string>& out) {
    std::string text;
    read(value, text);
    out = std::move(text);
  }

  // Absent means unknown; null is no value for these.
  void read(const V& value, std::optional<int>& out) {
    const auto whole = value.integer();
    if (whole && *whole >= INT32_MIN && *whole <= INT32_MAX)
      out = static_cast<int>(*whole);
    else
      fail("an integer", value);
  }

  void read(const V& value, std::optional<bool>& out) {
    bool flag = false;
    read(value, flag);
    out = flag;
  }

  void read(const V& value, std::optional<std::uint64_t>& out) {
    std::uint64_t count = 0;
    read(value, count);
    out = count;
  }

  template <has_fields S> void read(const V& value, std::optional<S>& out) {
    S figures;
    read(value, figures);
    if (error.empty())
      out = std::move(figures);
  }

  // An integer literal stays an integer (unsigned when not negative), anything else a double.
  void read(const V& value, pvar_number& out) {
    if (const auto whole = value.integer())
      out.value = *whole >= 0 ? pvar_number{static_cast<std::uint64_t>(*whole)}.value
                              : pvar_number{*whole}.value;
    else if (const auto count = value.count(); count && *count > INT64_MAX)
      out.value = *count;
    else if (const auto number = value.number())
      out.value = *number;
    else
      fail("a number", value);
  }

  template <typename T, T when_absent> void read(const V& value, defaulted<T, when_absent>& out) {
    read(value, out.value);
  }

  void read(const V& value, job_status& out) {
    const auto text = value.string();
    const auto found =
        text ? std::find(status_names.begin(), status_names.end(), *text) : status_names.end();
    if (found == status_names.end())
      return fail("one of finalized, aborted, signal, exit", value);
    out = static_cast<job_status>(found - status_names.begin());
  }

  void read(const V& value, histogram_bin& out) {
    std::optional<std::uint64_t> parts[2];
    size_t n = 0;
    if (value.is_array())
      value.elements([&](const V& item) {
        if (n < 2)
          parts[n] = item.count();
        return ++n <= 2;
      });
    if (n != 2 || !parts[0] || !parts[1])
      return fail("a [bin, calls] pair of non-negative integers", value);
    out = {*parts[0], *parts[1]};
  }

  template <typename T> void read(const V& value, std::vector<T>& out) {
    if (!value.is_array())
      return fail("an array", value);
    size_t i = 0;
    value.elements([&](const V& item) {
      push({{}, i++, true});
      read(item, out.emplace_back());
      pop();
      return error.empty();
    });
  }

  template <typename T> void read(const V& value, std::map<std::string, T>& out) {
    if (!value.is_object())
      return fail("an object", value);
    value.members([&](std::string_view key, const V& item) {
      const auto [it, fresh] = out.try_emplace(std::string(key));
      push({key, 0, false});
      if (fresh)
        read(item, it->second);
      else // nlohmann keeps the last, simdjson both: refuse rather than differ
        error = path() + ": the key appears twice";
      pop();
      return error.empty();
    });
  }

  // "routines" is an object keyed by name; the model keeps the name in the routine.
  void read(const V& value, std::vector<routine>& out) {
    std::map<std::string, routine> by_name;
    read(value, by_name);
    for (auto& [name, r] : by_name) {
      if (name.empty() && error.empty())
        error = path() + ": a routine has an empty name";
      r.name = name;
      out.push_back(std::move(r));
    }
  }
};

} // namespace strata::record::detail
