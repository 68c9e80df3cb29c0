#include "tracer/options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fnmatch.h>

namespace strata::trace {

namespace {

bool parse_seconds(const std::string& text, double& out) {
  if (text.empty())
    return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v))
    return false;
  out = v;
  return true;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = text.find(',', begin);
    const std::string item =
        text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    if (!item.empty())
      out.push_back(item);
    if (comma == std::string::npos)
      break;
    begin = comma + 1;
  }
  return out;
}

std::string apply(const std::string& key, const std::string& value, options& out) {
  if (key == "dir") {
    if (value.empty())
      return "dir= needs a directory";
    out.dir = value;
  } else if (key == "functions") {
    if (split_list(value).empty())
      return "functions= needs at least one glob";
    out.functions = value;
  } else if (key == "regions") {
    out.regions = split_list(value);
  } else if (key == "start") {
    if (!parse_seconds(value, out.start_s) || out.start_s < 0)
      return "start=" + value + " is not a number of seconds >= 0";
  } else if (key == "stop") {
    if (!parse_seconds(value, out.stop_s) || out.stop_s < 0)
      return "stop=" + value + " is not a number of seconds >= 0";
  } else if (key == "limit") {
    if (!parse_size(value, out.limit_bytes) || out.limit_bytes == 0)
      return "limit=" + value + " is not a size such as 4096, 512k, 64M or 2G";
  } else if (key == "prefault") {
    if (!parse_size(value, out.prefault_bytes))
      return "prefault=" + value + " is not a size such as 0, 512k, 16M";
  } else if (key == "policy") {
    if (value == "stop")
      out.policy = limit_policy::stop;
    else if (value == "ring")
      out.policy = limit_policy::ring;
    else
      return "policy=" + value + " is neither stop nor ring";
  } else if (key == "analyze") {
    if (value == "1" || value == "true" || value == "yes" || value == "on")
      out.analyze = true;
    else if (value == "0" || value == "false" || value == "no" || value == "off")
      out.analyze = false;
    else
      return "analyze=" + value + " is neither 1 nor 0";
  } else if (key == "analyze_limit") {
    if (!parse_seconds(value, out.analyze_limit_s) || out.analyze_limit_s < 0)
      return "analyze_limit=" + value + " is not a number of seconds >= 0";
  } else {
    return "unknown argument '" + key +
           "' (expected dir, functions, regions, start, stop, limit, policy, prefault, analyze, "
           "analyze_limit)";
  }
  return {};
}

} // namespace

bool options::region_wanted(const char* name) const {
  if (regions.empty())
    return true;
  for (const std::string& glob : regions)
    if (::fnmatch(glob.c_str(), name, 0) == 0)
      return true;
  return false;
}

bool parse_size(const std::string& text, uint64_t& bytes) {
  if (text.empty() || text[0] < '0' || text[0] > '9')
    return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0)
    return false;
  const std::string unit(end);
  uint64_t scale = 1;
  if (unit == "k" || unit == "K" || unit == "KiB")
    scale = 1ull << 10;
  else if (unit == "m" || unit == "M" || unit == "MiB")
    scale = 1ull << 20;
  else if (unit == "g" || unit == "G" || unit == "GiB")
    scale = 1ull << 30;
  else if (!unit.empty())
    return false;
  if (v > UINT64_MAX / scale)
    return false;
  bytes = v * scale;
  return true;
}

std::string parse_options(const std::vector<std::pair<std::string, std::string>>& args,
                          const getenv_fn& getenv, options& out) {
  static const std::pair<const char*, const char*> env_keys[] = {
      {"STRATA_TRACE_DIR", "dir"},         {"STRATA_TRACE_FUNCTIONS", "functions"},
      {"STRATA_TRACE_REGIONS", "regions"}, {"STRATA_TRACE_START", "start"},
      {"STRATA_TRACE_STOP", "stop"},       {"STRATA_TRACE_LIMIT", "limit"},
      {"STRATA_TRACE_POLICY", "policy"},   {"STRATA_TRACE_PREFAULT", "prefault"},
      {"STRATA_TRACE_ANALYZE", "analyze"}, {"STRATA_TRACE_ANALYZE_LIMIT", "analyze_limit"}};
  for (const auto& [variable, key] : env_keys) {
    const char* value = getenv(variable);
    if (value == nullptr || value[0] == '\0')
      continue;
    if (std::string error = apply(key, value, out); !error.empty())
      return std::string(variable) + ": " + error;
  }
  for (const auto& [key, value] : args)
    if (std::string error = apply(key, value, out); !error.empty())
      return error;
  if (out.stop_s >= 0 && out.stop_s <= out.start_s)
    return "stop= must be later than start=";
  return {};
}

std::string job_id_from_environment(const getenv_fn& getenv) {
  auto env = [&](const char* n) -> std::string {
    const char* v = getenv(n);
    return v != nullptr ? v : "";
  };
  if (std::string id = env("SLURM_JOB_ID"); !id.empty())
    return id + (env("SLURM_STEP_ID").empty() ? "" : "." + env("SLURM_STEP_ID"));
  for (const char* name : {"PBS_JOBID", "LSB_JOBID", "FLUX_JOB_ID", "JOB_ID"})
    if (std::string id = env(name); !id.empty())
      return id;
  return {};
}

std::string default_trace_dir(const std::string& job_id) {
  std::string name = "strata-trace-";
  for (const char c : job_id) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '-' || c == '_';
    name += plain ? c : '_';
  }
  return name;
}

} // namespace strata::trace
