// Asking a running job's tree of tool ranks (the monitor module, transport=tree) for its ranks'
// states: the tool ranks read their children's state files themselves (a rank stuck inside MPI
// need not help) and merge them on the way up as batches (batch.hpp), so no one reader has to see
// every file. The requester and the tree's root meet in the spool of the job's files, through
// files named by rank 0's pid (the last part of the job's key, JOB-PID):
//   SPOOL/tree-PID.hang-door       the root's, while it runs: "strata.hang-tree/2 TOOL_RANKS HOST"
//   SPOOL/tree-PID.hang-asks/      the root's, beside its door: one file per ask
//   SPOOL/tree-PID.hang-asks/ID    a requester's: "strata.hang-ask/1\nID\nKEY\nSPOOL\n"
//   SPOOL/KEY.hang-merged-ID       the root's answer: the batch (strata.hang-batch/1)
// Each is written whole (a temporary file renamed), so neither side ever reads half of one. Every
// ask has a file and an answer of its own, so two requesters at once (`strata hang --now` while
// the hang_after watch asks) each get theirs: the root serves one ask at a time, and removes its
// file once answered; a requester that stops waiting removes its ask, and the root then writes
// no answer for it. No MPI.
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
std::string tree_asks_dir(const std::string& spool, int64_t rank0_pid);
std::string tree_answer_path(const std::string& spool, const std::string& key,
                             const std::string& id);

// ---- the tree's side --------------------------------------------------------------------------

struct tree_ask {
  std::string id, key, spool;
  std::string path; // its file, kept until it is answered
};

// The root's door and the directory of asks in `spool` (an existing directory): true when both
// are there.
bool write_tree_door(const std::string& spool, int64_t rank0_pid, int tool_ranks,
                     const std::string& rank0_host);

// The door and the asks left (the root's end; `strata recover` for a job that is gone).
void remove_tree_door(const std::string& spool, int64_t rank0_pid);

// An ask waiting in the root's directory in `spool`, its file left until answer_tree_ask; nullopt
// when there is none. A malformed ask, one of another job (its key not ending with -PID) or naming
// a spool that is not a directory is removed, not served.
std::optional<tree_ask> next_tree_ask(const std::string& spool, int64_t rank0_pid);

// Serves the ask with `batch_bytes`, written whole, and removes the ask: true when the answer
// stays for its requester. A requester that stopped waiting (it removes its ask, then any answer)
// gets none, even when it gave up while the answer was being written.
bool answer_tree_ask(const tree_ask& ask, const std::string& batch_bytes);

// The states of `ranks` from their files SPOOL/KEY.rankR.hang; a rank whose file cannot be read
// (on another node without a shared spool, missing, damaged) is unread, with why.
state_batch read_rank_states(const std::string& spool, const std::string& key,
                             const std::vector<int32_t>& ranks);

// ---- the requester's side
// -------------------------------------------------------------------------

struct tree_request {
  std::string ask_path, answer_path;
  uint64_t started_ns = 0; // CLOCK_MONOTONIC
};

// Asks the tree of the job `key` whose files are in `spool`, when it has one (its door is there
// and names the host rank 0's state names, `rank0_host` empty: any); nullopt when it has none or
// the ask cannot be written.
std::optional<tree_request> ask_tree(const std::string& spool, const std::string& key,
                                     const std::string& rank0_host);

// The answer when it has come (read and removed), else nullopt: ask again later.
std::optional<batch_read_result> poll_tree(const tree_request& request);

// Stops waiting: the ask and any answer removed (an answer that comes after is `strata
// recover`'s to remove).
void give_up(const tree_request& request);

// For one who looks at the job again and again (rank 0's hang_after and `strata run
// --hang-after` every few hundred ms, `strata hang --now` until it has its answer): asks the tree,
// and takes its answer at a later look.
class tree_watch {
public:
  tree_watch() = default;
  tree_watch(const tree_watch&) = delete;
  tree_watch& operator=(const tree_watch&) = delete;
  ~tree_watch(); // an ask still waiting is withdrawn
  enum class step {
    wait,     // asked: look again later
    answered, // `out` holds the states the tree merged
    files,    // no tree, no answer in time, or a damaged one (`problem` says so): read the files
  };
  // `rank0_host`: a door that names another host is not this job's ("": any host).
  step look(const std::string& spool, const std::string& key, const std::string& rank0_host,
            state_batch& out, std::string& problem);

private:
  std::optional<tree_request> request_;
};

// What the diagnosis says of the path its states took (diagnosis::tree_*).
void note_tree(diagnosis& d, const state_batch& batch);

// For a job that is gone: the files its tree and its requesters left in `spool` (answers that
// came after their requester stopped waiting, a killed root's door and asks). The door stays when
// it names this host and rank 0's pid runs there again (another job's rank 0 may have it now).
void remove_tree_files(const std::string& spool, const std::string& key);

// How long a requester waits for the tree before reading the files itself.
inline constexpr uint64_t tree_answer_within_ns = 10'000'000'000ULL;

uint64_t monotonic_ns();

} // namespace strata::hang
