// The job record (schema strata.job/1, docs/job-record.md) as typed data, with a reader that
// never throws and a writer that round-trips with it; and the split of a routine's time by the
// machine model (model/model_file.hpp) into latency, transfer and synchronisation parts
// (Rabenseifner's estimate: latency from calls, transfer from bytes, synchronisation is what is
// left of the time). No MPI here: `strata report` reads records long after the job is gone.
#pragma once

#include "model/model_file.hpp"
#include "profiler/record/mpi_t_record.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::record {

inline constexpr std::string_view record_schema = "strata.job/1";

enum class job_status { finalized, aborted, signal, exit, killed };

// A figure over the ranks that reported, and the rank holding the largest value.
struct rank_spread {
  double min = 0, mean = 0, max = 0;
  std::uint64_t max_rank = 0;
  bool operator==(const rank_spread&) const = default;
};

struct percent_spread {
  double min = 0, mean = 0, max = 0;
  std::uint64_t min_rank = 0, max_rank = 0;
  bool operator==(const percent_spread&) const = default;
};

// Events of one hardware or software counter, split at the MPI boundary so that MPI's busy
// waiting does not inflate the application's figures.
struct counter {
  std::string unit;
  std::uint64_t in_mpi = 0, outside_mpi = 0;
  bool operator==(const counter&) const = default;
};

// `key` is the lower bound in bytes of a log2 size bin (0, 1, 2, 4, ...) in a size histogram,
// and the communicator size in a communicator-size histogram.
struct histogram_bin {
  std::uint64_t key = 0, calls = 0;
  bool operator==(const histogram_bin&) const = default;
};

// A value the record leaves out when it is `when_absent`, which is what its absence means.
template <typename T, T when_absent> struct defaulted {
  T value = when_absent;
  bool operator==(const defaulted&) const = default;
};

// Whether a routine's calls were timed. The profile only counts calls that cannot wait
// (MPI_Comm_rank, MPI_Type_size, MPI_Wtime, ...): "timed": false, time_s, min_s and max_s 0.
// Absent in the record: true (records written before the key existed timed every routine).
using timed_flag = defaulted<bool, true>;

struct per_rank_figures {
  rank_spread calls, time_s;
  bool operator==(const per_rank_figures&) const = default;
};

// Figures summed over all ranks.
struct routine {
  std::string name;
  std::uint64_t calls = 0;
  double time_s = 0, min_s = 0, max_s = 0;
  std::uint64_t count_sum = 0, bytes_sent = 0, bytes_received = 0;
  std::vector<histogram_bin> size_histogram;      // absent in the record: empty
  std::vector<histogram_bin> comm_size_histogram; // absent in the record: empty
  per_rank_figures per_rank;
  timed_flag timed; // absent in the record: timed

  // What reports and machine models call a routine's bytes: sent plus received, so that a
  // receive, a send and a collective all count the data they move. A model's bytes_per_s is
  // calibrated against this figure.
  std::uint64_t bytes() const { return bytes_sent + bytes_received; }
  bool operator==(const routine&) const = default;
};

// The event clock the times were taken with, as checked at MPI_Finalize on every rank (the
// core's clock, docs/job-record.md). Magnitudes over the ranks: the worst rank's.
struct clock_facts {
  std::string source;             // "tsc", "monotonic", or "mixed" when the ranks differed
  std::string kernel_clocksource; // rank 0's kernel clock source ("tsc", "kvm-clock", ...)
  double tsc_hz = 0;              // the largest calibrated rate over ranks; 0 without the TSC
  double rate_spread_ppm = 0;     // (largest - smallest rate) / largest, over the TSC ranks
  double drift_ppm = 0;           // the largest |event clock - CLOCK_MONOTONIC| per time
  std::uint64_t offset_ns = 0;    // the largest |event clock - CLOCK_MONOTONIC| at the check
  bool migrated = false;          // a rank was checked on another CPU than it calibrated on
  // "ok": every rank's check passed; "corrected": some rank's times were off by a rate error
  // and were scaled onto CLOCK_MONOTONIC; "flagged": some rank's times are off and could not
  // be corrected (its CPUs' counters disagree).
  std::string status;
  bool operator==(const clock_facts&) const = default;
};
// The modules that write job records.
inline constexpr std::string_view profile_module = "profile";
inline constexpr std::string_view overhead_module = "overhead";

// What Slurm says of the job (docs/job-record.md, "slurm"): from the ranks' SLURM_* variables
// and, where Strata's SPANK plugin set the task up, what slurmctld said (STRATA_SLURM_*).
struct slurm_facts {
  std::string job_id; // "81234"; an array's element "81230_4"; a het job's part "81240+1"
  std::string step;   // "0", "batch"; "" when not known
  std::string cluster, user, account, partition; // "" when not known
  // The job's quality of service; absent when Slurm did not say, and then qos_unknown says why
  // (a Slurm without accounting storage, slurmdbd, keeps no QOS).
  std::optional<std::string> qos, qos_unknown;
  std::uint64_t nodes = 0;                  // the job's nodes
  std::string node_list;                    // "n[1-2]", as Slurm writes it
  std::string tasks_per_node;               // the step's, as Slurm writes it: "2(x2)"
  std::optional<std::int64_t> time_limit_s; // absent: unlimited or not known
  // The job ran into its time limit: it did not finalize and its end lies at or after its
  // start plus the limit (Slurm's SIGTERM at the limit). False when the limit is not known.
  bool ended_by_time_limit = false;
  bool operator==(const slurm_facts&) const = default;
};

struct job_facts {
  std::string id;
  // Which module wrote it: "profile" or "overhead" (each leaves its own record of a job).
  // Absent: the profile (records written before the key existed).
  std::optional<std::string> module;
  // The Strata release that wrote it (include/strata/version.h). Absent: not known (written
  // before the key existed).
  std::optional<std::string> strata_version;
  std::string resource_manager;
  std::uint64_t ranks = 0, ranks_reported = 0, hosts = 0;
  std::vector<std::string> host_names;
  std::string user;
  std::uint64_t uid = 0;
  std::string executable;
  std::vector<std::string> argv;
  std::string mpi_flavor;
  std::string mpi_library;
  std::string language;
  std::string thread_level;
  bool pmpi_intercepted_by_application = false;
  std::map<std::string, std::string> environment;
  std::string start, end;
  job_status status = job_status::finalized;
  std::optional<std::int64_t> abort_code; // null or absent in the record: none
  std::optional<std::int64_t> signal;     // null or absent in the record: none
  // The code the process of rank 0 exited with after MPI_Finalize; absent: not known (the
  // process did not exit through exit(), or the record had left the spool by then).
  std::optional<int> exit_code;
  bool partial = false;
  double wall_time_s = 0, mpi_time_s = 0, mpi_percent = 0;
  percent_spread mpi_percent_by_rank;
  double profiler_overhead_s = 0;
  std::optional<double> profiler_finalize_s; // absent: not measured (a rebuilt record)
  // Whether the bytes received by untimed polls were estimated from the timed ones (the
  // profile's lean polls, docs/profile.md). Absent: not known (records rebuilt by strata
  // recover, and those written before the key existed, which counted every poll's bytes or
  // none): reports take it as not estimated.
  std::optional<bool> poll_bytes_estimated;
  // The overhead module: calls whose (processes, bytes) lay outside the machine model's grid,
  // compared with its edge. Absent: not compared with a model.
  std::optional<std::uint64_t> model_clamped_calls;
  std::map<std::string, counter> counters; // absent in the record: empty
  std::optional<clock_facts> clock;        // absent: not checked (records rebuilt, older ones)
  std::optional<slurm_facts> slurm;        // absent: not a Slurm job
  bool operator==(const job_facts&) const = default;
};

// One source line calling one MPI function, summed over ranks (STRATA_PROFILE_CALLSITES=1).
struct callsite {
  std::string function, file, caller;
  std::uint64_t line = 0, calls = 0, bytes = 0, ranks = 0;
  double time_s = 0;
  double wasted_s = 0; // time over the machine model's t_max, with the overhead module
  bool operator==(const callsite&) const = default;
};

// Point-to-point messages from one rank to another, in ranks of the application's world.
struct message_pair {
  std::uint64_t from = 0, to = 0, messages = 0, bytes = 0;
  bool operator==(const message_pair&) const = default;
};

// The pairs a large job's record leaves out (the section's bound), summed over all of them.
struct unlisted_pairs {
  std::uint64_t pairs = 0, messages = 0, bytes = 0;
  bool operator==(const unlisted_pairs&) const = default;
};

// One member's collective calls on a communicator and the bytes it sent in them.
struct member_collectives {
  std::uint64_t rank = 0, calls = 0, bytes = 0;
  bool operator==(const member_collectives&) const = default;
};

// Bytes per member of a communicator: the least, the mean and the most, with their ranks.
struct member_bytes_spread {
  std::uint64_t min = 0, max = 0, min_rank = 0, max_rank = 0;
  double mean = 0;
  bool operator==(const member_bytes_spread&) const = default;
};

// The collectives of one communicator, known by its members (world ranks): every
// communicator of the same members is one entry, whatever its handle on each rank.
struct communicator_collectives {
  std::string members; // "0-7,16" (common/rank_ranges.hpp)
  std::uint64_t size = 0, members_reported = 0;
  std::uint64_t calls = 0, bytes = 0; // summed over the members reported
  std::uint64_t calls_min = 0, calls_max = 0;
  member_bytes_spread bytes_per_member;
  // Each member's figures, in rank order; empty (absent in the record) for a communicator of
  // more members than a record lists each of (32).
  std::vector<member_collectives> per_member;
  bool operator==(const communicator_collectives&) const = default;
};

struct collective_sums {
  std::uint64_t calls = 0, bytes = 0;
  bool operator==(const collective_sums&) const = default;
};

// The collectives by communicator, heaviest (bytes, then calls) first. `unlisted`: those of the
// communicators a large job's record leaves out; `unattributed`: those on no communicator the
// profile could name (intercommunicators, communicators past its table); each absent when none.
struct collectives_section {
  std::vector<communicator_collectives> communicators;
  std::optional<collective_sums> unlisted, unattributed;
  bool operator==(const collectives_section&) const = default;
};

// Who sent how much to whom (the profile's matrix, docs/job-record.md): `pairs` sums the
// point-to-point kinds, `by_kind` ("point_to_point", "sendrecv", "persistent", "partitioned", and
// the one-sided "put", "get", "accumulate" from origin to target, which `pairs` leaves out) keeps
// them apart; both sorted by sender, then receiver, a pair that exchanged nothing left out.
// `unlisted` is absent when every pair is listed.
struct communication_section {
  std::vector<message_pair> pairs;
  std::map<std::string, std::vector<message_pair>> by_kind;
  std::optional<unlisted_pairs> unlisted;
  std::optional<collectives_section> collectives; // absent: not counted (strata recover)
  bool operator==(const communication_section&) const = default;
};

// Why the job hung (docs/job-record.md, "hang"): only in a record that strata recover made of a
// job whose ranks waited inside MPI when it stopped. Read: the verdict and the diagnosis for
// people; the rest of strata hang's JSON stays in the record's text.
struct hang_diagnosis {
  std::string verdict; // "hang", "deadlock", ... (docs/hang.md)
  std::string text;
  bool operator==(const hang_diagnosis&) const = default;
};

struct job_record {
  job_facts job;
  std::vector<routine> routines;   // in name order
  std::vector<callsite> callsites; // longest first; absent in the record: empty
  // Calls whose call site was not kept because the rank's table was full; written together
  // with "callsites". Absent in the record: 0.
  defaulted<std::uint64_t, 0> callsites_dropped;
  std::optional<mpi_t_section> mpi_t; // the library's own variables; absent: not read
  // Absent: not counted (records rebuilt by strata recover, older ones, the overhead module).
  std::optional<communication_section> communication;
  std::optional<hang_diagnosis> hang; // absent: the job did not hang, or was not recovered
  bool operator==(const job_record&) const = default;
};

struct parse_result {
  std::optional<job_record> record;
  std::string error; // one line, "PATH: what is wrong"; empty when `record` is set
  bool ok() const { return record.has_value(); }
};

// Never throws. Every field the model holds is checked for type and range; unknown keys are
// ignored so that newer writers stay readable.
parse_result parse_record(std::string_view json_text);

// The record as the profiler writes it, the one writer of strata.job/1: keys in name order,
// indented by one space, no newline at the end; figures left out where their absence says the
// same (see the comments above). parse_record reads it back to an equal record.
std::string to_json(const job_record& record);

std::string_view status_name(job_status status);

// Parts of a record in the record's own JSON form (the writer's key lists), for a tool that
// passes them on as they are, such as the web's job page.
nlohmann::json part_json(const percent_spread& spread);
nlohmann::json part_json(const rank_spread& spread);
nlohmann::json part_json(const std::vector<histogram_bin>& histogram);

struct time_split {
  double latency_s = 0, transfer_s = 0, sync_s = 0;
};

// Latency = calls * latency_s and transfer = bytes / bytes_per_s, clipped (latency first, as
// every call pays it) so that the parts never exceed the measured time; synchronisation is
// the rest. The three always sum to routine::time_s.
time_split split_time(const routine& measured, const model::routine_cost& model);

} // namespace strata::record
