#include "tracer/options.hpp"

#include "config/option_binder.hpp"

#include <fnmatch.h>

namespace strata::trace {

namespace {

// Every option once: key, field, default, range, help.
config::option_binder bound_to(options& o) {
  config::option_binder b;
  b.add_string("dir", o.dir, nullptr,
               "the archive's directory (default ./strata-trace-<job id>); an earlier archive in "
               "it is replaced")
      .not_empty()
      .add_list("functions", o.functions, "*",
                "the MPI functions recorded: comma- or '+'-separated globs; the others cost "
                "nothing")
      .not_empty()
      .add_list("regions", o.regions, nullptr, "the user regions recorded (globs; default all)")
      .add_duration("start", o.start_s, "0", "record from this long after MPI_Init ...")
      .add_duration("stop", o.stop_s, nullptr, "... until this long after it (default: to the end)")
      .add_size("limit", o.limit_bytes, "256M", "memory per rank for records (72 bytes each)", 1)
      .add_enum("policy", o.policy, "stop", "at the limit: stop keeps the beginning, ring the end",
                {{"stop", limit_policy::stop}, {"ring", limit_policy::ring}})
      .add_enum("cheap_calls", o.record_cheap_calls, "count",
                "calls that never wait and cost a few ns (MPI_Wtime, MPI_Comm_rank, ...): count "
                "counts them per rank and routine, record records each as an event",
                {{"count", false}, {"record", true}})
      .add_size("prefault", o.prefault_bytes, "16M",
                "of the limit, allocated and touched at MPI_Init")
      .add_bool("analyze", o.analyze, "0",
                "1: analyse the archive at MPI_Finalize on the job's ranks (analysis.json and "
                ".txt in it)")
      .add_duration("analyze_limit", o.analyze_limit_s, "60",
                    "skip that analysis when its estimated time exceeds this")
      .require_more("stop", "start", "later than");
  return b;
}

} // namespace

const strata_module_options* declared_options() {
  static options unused;
  static config::option_binder declared = bound_to(unused);
  return declared.declared();
}

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
  out = options{};
  return bound_to(out).take(values);
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
