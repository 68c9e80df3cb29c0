#include "options.hpp"

#include "config/option_binder.hpp"

namespace strata::profiler::options {

namespace {

// The older variable names each option had before the stack could give it; the overhead
// module, the same code, answered to them too.
#ifdef STRATA_OVERHEAD_MODULE
#define STRATA_PROFILE_ONLY(profile_variable) profile_variable
#else
#define STRATA_PROFILE_ONLY(profile_variable) nullptr // STRATA_PROFILE_<KEY> already
#endif

settings values;

config::option_binder& binder() {
  static config::option_binder b = [] {
    config::option_binder o;
#ifdef STRATA_OVERHEAD_MODULE
    values.callsites = true; // the overhead module keeps call sites always
    values.communication = false;
#else
    o.add_bool("callsites", values.callsites, "0", "keep call sites (source lines) per routine");
    o.add_bool("communication", values.communication, "1",
               "count messages and bytes per pair of ranks and collectives per communicator for "
               "the record's communication section (0: no such section, and point-to-point calls "
               "cost a few instructions less)");
#endif
    o.add_string("spool", values.spool, nullptr,
                 "the spool directory of job records (default: the install's)", "STRATA_SPOOL")
        .add_string("json", values.json, nullptr, "also write the job record to this file",
                    STRATA_PROFILE_ONLY("STRATA_PROFILE_JSON"))
        .add_string("out", values.out, nullptr,
                    "write the user's report to this file ('-': standard output)",
                    STRATA_PROFILE_ONLY("STRATA_PROFILE_OUT"))
        .add_string("model", values.model, nullptr,
#ifdef STRATA_OVERHEAD_MODULE
                    "the machine model (strata bench), required",
#else
                    "a machine model (strata bench) for the report's latency/transfer/sync split",
#endif
                    "STRATA_MODEL")
        .add_list("counters", values.counters, nullptr,
                  "hardware or software events to count (PAPI, perf_event)", "STRATA_COUNTERS")
        .add_enum("polls", values.lean_polls, "lean",
                  "lean: count untimed polls only, estimating their bytes; exact: read every poll",
                  {{"lean", true}, {"exact", false}}, STRATA_PROFILE_ONLY("STRATA_PROFILE_POLLS"))
        .add_uint("poll_sample", values.poll_sample, "64",
                  "time one poll in about N (1 to 1000000)", 1, 1000000,
                  STRATA_PROFILE_ONLY("STRATA_PROFILE_POLL_SAMPLE"))
        .add_duration_ms("write_timeout_ms", values.write_timeout_s, "10s",
                         "how long writing the job record may take (10s, 500ms; a number "
                         "without a unit is ms)",
                         1e-3, 1e6, "STRATA_WRITE_TIMEOUT_MS")
        .add_bool("core_sums", values.core_sums, "1",
                  "let the core sum timed calls without events where it can (0: an event for "
                  "every call)")
        .add_enum("mpi_t", values.mpi_t, "auto",
                  "read the MPI library's own performance and control variables (MPI_T) into the "
                  "record: 1 always, auto only for a job long enough that starting MPI_T costs "
                  "under 0.1 %",
                  {{"0", mpi_t_reading::off},
                   {"1", mpi_t_reading::always},
                   {"auto", mpi_t_reading::automatic}},
                  STRATA_PROFILE_ONLY("STRATA_PROFILE_MPI_T"))
        .add_duration("hang_after", values.hang_after_s, "0",
                      "rank 0 prints why the job hangs once a rank has waited this long (90, "
                      "90s, 5m) inside one MPI call and no rank completed one (0: never)",
                      1e9);
    return o;
  }();
  return b;
}

} // namespace

const strata_module_options* declared() {
  return binder().declared();
}

std::string take(const strata_module_arg* args, int nargs) {
  return binder().take(args, nargs);
}

const settings& current() {
  return values;
}

} // namespace strata::profiler::options
