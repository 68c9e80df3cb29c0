// One job as the site store keeps it: the figures it keeps in columns (job_row, routine_row),
// built from a parsed record (make_stored_job), and the record's own text, kept deflated
// (pack_record / unpack_record: the one writer and the one reader of that encoding).
#pragma once

#include "profiler/record/mpi_t_record.hpp"

#include <algorithm>
#include <climits>
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace strata::record {
struct job_record;
}

namespace strata::site {

// The per-job figures the store keeps in columns (everything else is in the record).
// A job belongs to the owner of its spool file (`owner`, `owner_uid`); what the record claims
// is kept beside it (`claimed_user`, `claimed_uid`) and `owner_mismatch` flags a difference.
struct job_row {
  std::int64_t job_id = 0; // assigned by the store
  std::string job_key;     // identity: record id and start time; unique in the store
  std::string record_id;   // job.id of the record ("slurm:81234", "local:...")
  std::string owner;       // user name of the spool file's owner
  std::int64_t owner_uid = 0;
  std::string claimed_user; // job.user of the record
  std::int64_t claimed_uid = 0;
  bool owner_mismatch = false;
  std::int64_t start_time = 0, end_time = 0; // seconds since the epoch
  std::int64_t ranks = 0, ranks_reported = 0, hosts = 0;
  std::string executable, language, mpi_flavor, status;
  bool partial = false;
  double wall_time_s = 0;
  double cpu_time_s = 0; // wall time * ranks reported: the job's "application CPU time"
  double mpi_time_s = 0, mpi_percent = 0, overhead_s = 0;
  std::int64_t mpi_calls = 0, mpi_bytes = 0;
  std::int64_t routine_groups = 0;    // bit set of routine_group (site/groups.hpp)
  int cpu_class = 0;                  // floor(log10(cpu_time_s)), at least 0
  std::optional<double> instructions; // outside MPI, when the job counted them
  std::int64_t ingested_at = 0;
  // The Slurm account and partition (version 12), "" for jobs without them.
  std::string slurm_account, slurm_partition;
  // Rank 0's exit code after MPI_Finalize (version 13); absent (NULL) when the record does not
  // know it, never 0: the process did not exit through exit(), or the record left the spool
  // before it did, or it was rebuilt, or it was stored before the column existed.
  std::optional<std::int64_t> exit_code;
};

// How a column of `jobs` gets its value at insert.
enum class column_fill {
  member,      // the job_row member's value
  by_store,    // the store numbers it (job_id): not inserted
  insert_time, // the insert's time (ingested_at), whatever the member holds
};

// A column of `jobs`: its name, its key in the web interface's job JSON (null: not shown
// there) and how it is filled. Its SQL type follows its member's type (job_column_type).
struct job_column {
  const char* name;
  const char* json_key;
  column_fill fill = column_fill::member;
};

// The columns of `jobs`, each once, in the table's order, with the job_row member each holds:
// visit(job_column, member) for each. The store's select and reader (store.cpp), both
// backends' inserts and the web's job JSON walk this list. The migrations that made the table
// stay as they were applied (schema.cpp): a new column is a member above, a line here and a
// migration adding it (StoreBackend.JobColumnsAreTheSchemas checks the two agree).
template <typename Row, typename Visit>
requires std::same_as<std::remove_const_t<Row>, job_row>
void visit_job_columns(Row& j, Visit&& visit) {
  visit(job_column{"job_id", "id", column_fill::by_store}, j.job_id);
  visit(job_column{"job_key", nullptr}, j.job_key);
  visit(job_column{"record_id", "record_id"}, j.record_id);
  visit(job_column{"owner", "owner"}, j.owner);
  visit(job_column{"owner_uid", "owner_uid"}, j.owner_uid);
  visit(job_column{"claimed_user", "claimed_user"}, j.claimed_user);
  visit(job_column{"claimed_uid", "claimed_uid"}, j.claimed_uid);
  visit(job_column{"owner_mismatch", "owner_mismatch"}, j.owner_mismatch);
  visit(job_column{"start_time", "start"}, j.start_time);
  visit(job_column{"end_time", "end"}, j.end_time);
  visit(job_column{"ranks", "ranks"}, j.ranks);
  visit(job_column{"ranks_reported", nullptr}, j.ranks_reported);
  visit(job_column{"hosts", "hosts"}, j.hosts);
  visit(job_column{"executable", "executable"}, j.executable);
  visit(job_column{"language", "language"}, j.language);
  visit(job_column{"mpi_flavor", "mpi_flavor"}, j.mpi_flavor);
  visit(job_column{"status", "status"}, j.status);
  visit(job_column{"partial", "partial"}, j.partial);
  visit(job_column{"wall_time_s", "wall_time_s"}, j.wall_time_s);
  visit(job_column{"cpu_time_s", "cpu_time_s"}, j.cpu_time_s);
  visit(job_column{"mpi_time_s", "mpi_time_s"}, j.mpi_time_s);
  visit(job_column{"mpi_percent", "mpi_percent"}, j.mpi_percent);
  visit(job_column{"overhead_s", nullptr}, j.overhead_s);
  visit(job_column{"mpi_calls", "mpi_calls"}, j.mpi_calls);
  visit(job_column{"mpi_bytes", "mpi_bytes"}, j.mpi_bytes);
  visit(job_column{"routine_groups", nullptr}, j.routine_groups);
  visit(job_column{"cpu_class", nullptr}, j.cpu_class);
  visit(job_column{"instructions", nullptr}, j.instructions);
  visit(job_column{"ingested_at", nullptr, column_fill::insert_time}, j.ingested_at);
  visit(job_column{"slurm_account", nullptr}, j.slurm_account);
  visit(job_column{"slurm_partition", nullptr}, j.slurm_partition);
  visit(job_column{"exit_code", "exit_code"}, j.exit_code);
}

// A member that may be absent is a column that may be NULL (std::optional of a column type).
template <typename T> inline constexpr bool nullable_job_column = false;
template <typename T> inline constexpr bool nullable_job_column<std::optional<T>> = true;

// The SQL type of a column holding a member of type T, as the migrations declare it: what both
// backends' inserts write (PostgreSQL's binary COPY needs the exact type). An optional member
// is a column that may be NULL (nullable_job_column); every other is NOT NULL.
template <typename T> constexpr const char* job_column_type() {
  if constexpr (nullable_job_column<T>)
    return job_column_type<typename T::value_type>();
  else if constexpr (std::is_same_v<T, std::string>)
    return "TEXT";
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return "BIGINT";
  else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, bool>)
    return "INTEGER";
  else if constexpr (std::is_same_v<T, double>)
    return "DOUBLE PRECISION";
  else
    static_assert(sizeof(T) == 0, "a job_row member of a type the store has no column for");
}

struct routine_row {
  std::string routine;
  std::int64_t calls = 0;
  double time_s = 0;
  std::int64_t bytes = 0; // sent + received
  std::int64_t count_sum = 0;
};

// One MPI_T performance variable of a job as the store indexes it (site/mpi_t_index.hpp): its
// figures over the ranks as doubles (exact up to 2^53).
struct pvar_row {
  std::string name, var_class;
  std::int64_t ranks = 0;
  double sum = 0, min = 0, max = 0;
};

// What the store indexes of a job's MPI_T section: its control variables as one text (the
// set's identity; see mpi_t_index.cpp) and the performance variables its ranks read.
struct mpi_t_rows {
  // The control variables, in name order (settings_text): shared by the jobs of one set that
  // a thread read, since a few hundred pairs of text would be most of each job's memory.
  std::shared_ptr<const std::string> settings;
  std::string digest; // what tells this set of control variables from others
  std::vector<pvar_row> pvars;
};

// A record's count as the store's signed 64-bit integers keep it: one beyond them as the largest.
inline std::int64_t stored_count(std::uint64_t figure) {
  return static_cast<std::int64_t>(std::min<std::uint64_t>(figure, INT64_MAX));
}

// A job's point-to-point traffic between two ranks as the store keeps it (the record's
// `communication.by_kind`): one row per kind of message, sender and receiver (world ranks).
struct pair_row {
  std::string kind; // one of common/message_kinds.hpp's pair_kind_names ("sendrecv", ...)
  std::int64_t from = 0, to = 0, messages = 0, bytes = 0;
};

// The pairs of one job's record, and what its record left out (a large job's record lists its
// heaviest pairs only): the matrix is whole when unlisted_pairs is 0.
struct job_pair_rows {
  std::vector<pair_row> rows;
  std::int64_t unlisted_pairs = 0, unlisted_messages = 0, unlisted_bytes = 0;
};

// One communicator's collectives as the store keeps them (the record's
// `communication.collectives`, docs/job-record.md): its members (world ranks, "0-7,16"), its
// figures, and its members' when the record lists them (communicators of up to 32 members).
struct collective_member_row {
  std::int64_t rank = 0, calls = 0, bytes = 0;
};
struct communicator_row {
  std::string members;
  std::int64_t size = 0, members_reported = 0, calls = 0, bytes = 0, calls_min = 0, calls_max = 0;
  std::int64_t bytes_min = 0, bytes_min_rank = 0, bytes_max = 0, bytes_max_rank = 0;
  double bytes_mean = 0;
  std::optional<double> imbalance; // bytes_max / bytes_mean; absent: no member sent bytes
  std::vector<collective_member_row> per_member;
};

// The collectives of one job's record by communicator, heaviest first, and those its record
// left out (`unlisted`) or could not attribute to a communicator (`unattributed`).
struct job_collective_rows {
  std::vector<communicator_row> communicators;
  std::int64_t unlisted_calls = 0, unlisted_bytes = 0, unattributed_calls = 0,
               unattributed_bytes = 0;
};

// A routine whose time per rank moved most in a flagged job, against the history's median.
struct moved_routine {
  std::string routine;
  double value_s = 0, baseline_s = 0;
};

// A call site (one source line calling one MPI routine) whose time per rank moved most in a
// flagged job, against the median of the earlier runs that recorded call sites.
struct moved_site {
  std::string function, file;
  std::uint64_t line = 0;
  double value_s = 0, baseline_s = 0;
};

// Why a job was flagged as a regression (site/regressions.hpp): the metric beyond the noise of
// the same program's earlier runs at the same size that moved most ("wall", "MPI" or a
// routine), its time per rank, the history's centre and noise, and the routines that moved.
struct regression_flag {
  std::string metric;
  double value_s = 0, baseline_s = 0, noise_s = 0;
  int history_runs = 0;
  std::vector<moved_routine> moved;
};

// One job as stored: the row, its routines and the record's JSON text as it was spooled
// (kept deflated in the store, see pack_record).
struct stored_job {
  job_row job;
  std::vector<routine_row> routines;
  std::string record_json;
  std::string record_packed; // pack_record(record_json) when done ahead (ingest's workers)
  // The record's arguments after the program (argument_line): with owner and executable, the
  // program the job is a run of (site/programs.hpp).
  std::string arguments;
  std::optional<regression_flag> regression; // set before the insert by the regression scorer
  std::optional<mpi_t_rows> mpi_t;           // absent: the record has no MPI_T section
  std::optional<job_pair_rows> pairs;        // absent: the record has no communication section
  // Absent: the record's communication section has no collectives (strata recover's records).
  std::optional<job_collective_rows> collectives;
};

// Whether a job's figures may stand for its program: it finalized on every rank and was not
// rebuilt from per-rank files. Partial jobs are left out of models and histories.
bool complete_run(const job_row& j);

// argv after the program name as one line: arguments separated by one space, an argument with
// a space, quote or backslash (or an empty one) in single quotes, as a shell would take it.
std::string argument_line(const std::vector<std::string>& argv);

// argument_line of a stored record's job.argv, read without parsing the rest (migration 8
// fills the programs of jobs stored before it); empty when the text holds none.
std::string arguments_of_record(const std::string& json);

// Builds what the store keeps from a parsed record, its text and the spool file's owner.
// `owner_name` empty: looked up from the uid (the record's user when it claims the same uid,
// else "uid<N>").
// `cvars`: the record's MPI_T control variables when they were read apart
// (record::parse_record_lean); without, those of the record's section.
stored_job make_stored_job(const record::job_record& record, std::string record_json,
                           std::int64_t owner_uid, std::string owner_name = {},
                           const std::vector<record::cvar_view>* cvars = nullptr);

// The record column's encoding (deflated JSON) and back. unpack throws store_error.
std::string pack_record(const std::string& json);
std::string unpack_record(const std::string& stored);

} // namespace strata::site
