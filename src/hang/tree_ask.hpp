// Asking a running job's tree of tool ranks (the monitor module, transport=tree) for its ranks'
// states: the tool ranks read their children's state files themselves (a rank stuck inside MPI
// need not help) and merge them on the way up as batches (batch.hpp), so no one reader has to see
// every file. The requester and the tree's root meet in the spool of the job's files, through
// three files named by rank 0's pid (the last part of the job's key, JOB-PID):
//   SPOOL/tree-PID.hang-door     the root's, while it runs: "strata.hang-tree/1 TOOL_RANKS HOST"
//   SPOOL/tree-PID.hang-ask      a requester's: "strata.hang-ask/1\nID\nKEY\nSPOOL\n"
//   SPOOL/KEY.hang-merged-ID     the root's answer: the batch (strata.hang-batch/1)
// Each is written whole (a temporary file renamed), so neither side ever reads half of one.
// No MPI.
#pragma once

#include "hang/batch.hpp"
#include "hang/diagnose.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::hang {

// Rank 0's pid from the job's key "JOB-PID"; 0 when the key does not end so.
int64_t rank0_pid_of_key(const std::string& key);

std::string tree_door_path(const std::string& spool, int64_t rank0_pid);
std::string tree_ask_path(const std::string& spool, int64_t rank0_pid);
std::string tree_answer_path(const std::string& spool, const std::string& key,
                             const std::string& id);

// ---- the tree's side --------------------------------------------------------------------------

struct tree_ask {
  std::string id, key, spool;
};

// The root's door in `spool` (an existing directory): true when written.
bool write_tree_door(const std::string& spool, int64_t rank0_pid, int tool_ranks,
                     const std::string& rank0_host);

// The ask at `path`, removed as it is taken; nullopt when there is none, or it is malformed, of
// another job (its key not ending with -PID), or names a spool that is not a directory.
std::optional<tree_ask> take_tree_ask(const std::string& path, int64_t rank0_pid);

// The states of `ranks` from their files SPOOL/KEY.rankR.hang; a rank whose file cannot be read
// (on another node without a shared spool, missing, damaged) is unread, with why.
state_batch read_rank_states(const std::string& spool, const std::string& key,
                             const std::vector<int32_t>& ranks);

// The root's answer, written whole: true when written.
bool write_tree_answer(const std::string& path, const std::string& batch_bytes);

// ---- the requester's side
// -------------------------------------------------------------------------

struct tree_request {
  std::string answer_path;
  uint64_t started_ns = 0; // CLOCK_MONOTONIC
};

// Asks the tree of the job `key` whose files are in `spool`, when it has one (its door is there
// and names the host rank 0's state names, `rank0_host` empty: any); nullopt when it has none or
// the ask cannot be written.
std::optional<tree_request> ask_tree(const std::string& spool, const std::string& key,
                                     const std::string& rank0_host);

// The answer when it has come (read and removed), else nullopt: ask again later.
std::optional<batch_read_result> poll_tree(const tree_request& request);

// ask_tree, then waits for the answer up to `timeout_ns`: nullopt when the job has no tree or it
// did not answer in time (then the files are read as without it).
std::optional<batch_read_result> states_through_tree(const std::string& spool,
                                                     const std::string& key,
                                                     const std::string& rank0_host,
                                                     uint64_t timeout_ns);

// For a watch that looks at the job every few hundred ms (rank 0's hang_after, `strata run
// --hang-after`): asks the tree, and takes its answer at a later look.
class tree_watch {
public:
  enum class step {
    wait,     // asked: look again later
    answered, // `out` holds the states the tree merged
    files,    // no tree, or no answer in time (another ask took its place): read the files
  };
  step look(const std::string& spool, const std::string& key, state_batch& out);

private:
  std::optional<tree_request> request_;
};

// What the diagnosis says of the path its states took (diagnosis::tree_*).
void note_tree(diagnosis& d, const state_batch& batch);

// How long a requester waits for the tree before reading the files itself.
inline constexpr uint64_t tree_answer_within_ns = 10'000'000'000ULL;

uint64_t monotonic_ns();

} // namespace strata::hang
