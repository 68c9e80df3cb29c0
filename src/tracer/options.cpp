#include "tracer/options.hpp"

#include "config/options.hpp"

#include <fnmatch.h>

#include <iterator>
#include <optional>

namespace strata::trace {

namespace {
const strata_option trace_options[] = {
    {"dir", "string", nullptr,
     "the archive's directory (default ./strata-trace-<job id>); an earlier archive in it is "
     "replaced",
     nullptr},
    {"functions", "list", "*",
     "the MPI functions recorded: comma- or '+'-separated globs; the others cost nothing", nullptr},
    {"regions", "list", nullptr, "the user regions recorded (globs; default all)", nullptr},
    {"start", "duration", "0", "record from this long after MPI_Init ...", nullptr},
    {"stop", "duration", nullptr, "... until this long after it (default: to the end)", nullptr},
    {"limit", "size", "256M", "memory per rank for records (72 bytes each)", nullptr},
    {"policy", "enum:stop|ring", "stop", "at the limit: stop keeps the beginning, ring the end",
     nullptr},
    {"cheap_calls", "enum:count|record", "count",
     "calls that never wait and cost a few ns (MPI_Wtime, MPI_Comm_rank, ...): count counts "
     "them per rank and routine, record records each as an event",
     nullptr},
    {"prefault", "size", "16M", "of the limit, allocated and touched at MPI_Init", nullptr},
    {"analyze", "bool", "0",
     "1: analyse the archive at MPI_Finalize on the job's ranks (analysis.json and .txt in it)",
     nullptr},
    {"analyze_limit", "duration", "60", "skip that analysis when its estimated time exceeds this",
     nullptr},
};
} // namespace

const strata_module_options trace_option_list = {
    sizeof(strata_module_options), static_cast<int>(std::size(trace_options)), trace_options};

namespace {

// Globs separated by commas or '+' (a comma also separates modules in --tools).
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  for (const char c : text + ",") {
    if (c != ',' && c != '+') {
      item += c;
    } else if (!item.empty()) {
      out.push_back(item);
      item.clear();
    }
  }
  return out;
}

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items)
    text += (text.empty() ? "" : ",") + item;
  return text;
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

std::string parse_options(const std::vector<std::pair<std::string, std::string>>& values,
                          options& out) {
  for (const auto& [key, value] : values) {
    if (key == "dir") {
      if (value.empty())
        return "dir= needs a directory";
      out.dir = value;
    } else if (key == "functions") {
      const std::vector<std::string> globs = split_list(value);
      if (globs.empty())
        return "functions= needs at least one glob";
      out.functions = joined(globs);
    } else if (key == "regions") {
      out.regions = split_list(value);
    } else if (key == "start" || key == "stop") {
      const std::optional<double> seconds = config::parse_duration(value);
      if (!seconds || *seconds < 0)
        return key + "=" + value + " is not a duration >= 0";
      (key == "start" ? out.start_s : out.stop_s) = *seconds;
    } else if (key == "limit" || key == "prefault") {
      const std::optional<uint64_t> bytes = config::parse_size(value);
      if (!bytes || (key == "limit" && *bytes == 0))
        return key + "=" + value + " is not a size" + (key == "limit" ? " above 0" : "");
      (key == "limit" ? out.limit_bytes : out.prefault_bytes) = *bytes;
    } else if (key == "policy") {
      if (value != "stop" && value != "ring")
        return "policy=" + value + " is neither stop nor ring";
      out.policy = value == "ring" ? limit_policy::ring : limit_policy::stop;
    } else if (key == "cheap_calls") {
      if (value != "count" && value != "record")
        return "cheap_calls=" + value + " is neither count nor record";
      out.record_cheap_calls = value == "record";
    } else if (key == "analyze") {
      out.analyze = config::parse_bool(value).value_or(false);
    } else if (key == "analyze_limit") {
      const std::optional<double> seconds = config::parse_duration(value);
      if (!seconds || *seconds < 0)
        return "analyze_limit=" + value + " is not a duration >= 0";
      out.analyze_limit_s = *seconds;
    } else {
      return "unknown option '" + key + "'";
    }
  }
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
