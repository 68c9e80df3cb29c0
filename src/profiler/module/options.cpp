#include "options.hpp"

#include "config/options.hpp"

#include <iterator>
#include <optional>
#include <string_view>

namespace strata::profiler::options {

namespace {

// The older variable names each option had before the stack could give it; the overhead
// module, the same code, answered to them too.
#ifdef STRATA_OVERHEAD_MODULE
#define STRATA_PROFILE_ONLY(profile_variable) profile_variable
#else
#define STRATA_PROFILE_ONLY(profile_variable) nullptr // STRATA_PROFILE_<KEY> already
#endif

const strata_option declarations[] = {
#ifndef STRATA_OVERHEAD_MODULE
    {"callsites", "bool", "0", "keep call sites (source lines) per routine", nullptr},
#endif
    {"spool", "string", nullptr, "the spool directory of job records (default: the install's)",
     "STRATA_SPOOL"},
    {"json", "string", nullptr, "also write the job record to this file",
     STRATA_PROFILE_ONLY("STRATA_PROFILE_JSON")},
    {"out", "string", nullptr, "write the user's report to this file ('-': standard output)",
     STRATA_PROFILE_ONLY("STRATA_PROFILE_OUT")},
    {"model", "string", nullptr,
#ifdef STRATA_OVERHEAD_MODULE
     "the machine model (strata bench), required",
#else
     "a machine model (strata bench) for the report's latency/transfer/sync split",
#endif
     "STRATA_MODEL"},
    {"counters", "list", nullptr, "hardware or software events to count (PAPI, perf_event)",
     "STRATA_COUNTERS"},
    {"polls", "enum:lean|exact", "lean",
     "lean: count untimed polls only, estimating their bytes; exact: read every poll",
     STRATA_PROFILE_ONLY("STRATA_PROFILE_POLLS")},
    {"poll_sample", "uint", "64", "time one poll in about N (1 to 1000000)",
     STRATA_PROFILE_ONLY("STRATA_PROFILE_POLL_SAMPLE")},
    {"write_timeout_ms", "uint", "10000", "how long writing the job record may take (ms)",
     "STRATA_WRITE_TIMEOUT_MS"},
    {"core_sums", "bool", "1",
     "let the core sum timed calls without events where it can (0: an event for every call)",
     nullptr},
    {"mpi_t", "enum:0|1|auto", "auto",
     "read the MPI library's own performance and control variables (MPI_T) into the record: "
     "1 always, auto only for a job long enough that starting MPI_T costs under 0.1 %",
     STRATA_PROFILE_ONLY("STRATA_PROFILE_MPI_T")},
    {"hang_after", "uint", "0",
     "rank 0 prints why the job hangs once a rank has waited this many seconds inside one MPI "
     "call and no rank completed one (0: never)",
     nullptr},
};
const strata_module_options declared_list = {
    sizeof(strata_module_options), static_cast<int>(std::size(declarations)), declarations};

struct settings {
  bool callsites = false;
  std::optional<std::string> counters, spool, json, out, model;
  bool lean_polls = true;
  uint32_t poll_sample = 64;
  uint64_t write_timeout_ms = 10000;
  mpi_t_reading mpi_t = mpi_t_reading::automatic;
  bool core_sums = true;
  uint64_t hang_after_s = 0;
};
settings values;

const char* or_null(const std::optional<std::string>& v) {
  return v && !v->empty() ? v->c_str() : nullptr;
}

} // namespace

const strata_module_options* declared() {
  return &declared_list;
}

std::string take(const strata_module_arg* args, int nargs) {
  settings s;
#ifdef STRATA_OVERHEAD_MODULE
  s.callsites = true; // the overhead module keeps call sites always
#endif
  for (int i = 0; i < nargs; ++i) {
    const std::string_view key = args[i].key;
    const std::string value = args[i].value;
    if (key == "callsites") {
      s.callsites = config::parse_bool(value).value_or(false);
    } else if (key == "spool") {
      s.spool = value;
    } else if (key == "json") {
      s.json = value;
    } else if (key == "out") {
      s.out = value;
    } else if (key == "model") {
      s.model = value;
    } else if (key == "counters") {
      s.counters = value;
      for (char& c : *s.counters)
        if (c == '+')
          c = ','; // commas separate modules in --tools
    } else if (key == "polls") {
      s.lean_polls = value != "exact";
    } else if (key == "poll_sample") {
      const uint64_t n = config::parse_uint(value).value_or(0);
      if (n < 1 || n > 1000000)
        return "option poll_sample: '" + value + "' is not from 1 to 1000000";
      s.poll_sample = static_cast<uint32_t>(n);
    } else if (key == "core_sums") {
      s.core_sums = config::parse_bool(value).value_or(true);
    } else if (key == "mpi_t") {
      if (value == "auto")
        s.mpi_t = mpi_t_reading::automatic;
      else if (const std::optional<bool> on = config::parse_bool(value))
        s.mpi_t = *on ? mpi_t_reading::always : mpi_t_reading::off;
      else
        return "option mpi_t: '" + value + "' is not 0, 1 or auto";
    } else if (key == "hang_after") {
      const std::optional<uint64_t> seconds = config::parse_uint(value);
      if (!seconds || *seconds > 1000000000)
        return "option hang_after: '" + value + "' is not a number of seconds";
      s.hang_after_s = *seconds;
    } else if (key == "write_timeout_ms") {
      const uint64_t ms = config::parse_uint(value).value_or(0);
      if (ms == 0)
        return "option write_timeout_ms: '" + value + "' is not a positive number of ms";
      s.write_timeout_ms = ms;
    }
  }
  values = std::move(s);
  return {};
}

bool callsites() {
  return values.callsites;
}
const char* counters() {
  return or_null(values.counters);
}
const char* spool() {
  return values.spool ? values.spool->c_str() : nullptr;
}
const char* record_copy() {
  return or_null(values.json);
}
const char* report() {
  return or_null(values.out);
}
const char* machine_model() {
  return or_null(values.model);
}
bool lean_polls() {
  return values.lean_polls;
}
uint32_t poll_sample_interval() {
  return values.poll_sample;
}
mpi_t_reading mpi_t() {
  return values.mpi_t;
}
bool core_sums() {
  return values.core_sums;
}
uint64_t hang_after_s() {
  return values.hang_after_s;
}
std::chrono::milliseconds write_timeout() {
  return std::chrono::milliseconds(values.write_timeout_ms);
}

} // namespace strata::profiler::options
