// The hang diagnosis through the tree of tool ranks: when `strata hang --now` or the profile's
// watcher (hang_after) asks (src/hang/tree_ask.hpp: an ask file in the spool, next to the job's
// state files), the root passes the ask down; each tool node above application ranks reads its
// ranks' state files itself (a rank stuck inside MPI cannot offload anything), and the batches
// (src/hang/batch.hpp) merge on the way up; the root writes the merged batch for the one who
// asked, who runs the usual analysis on it. Each ask has its own file and answer; the root serves
// them one after another. The tool ranks stay responsive while the application
// is stuck, so this works whenever the job's own MPI still does for them.
#include "monitor/module/state.hpp"

#include "hang/tree_ask.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <sys/stat.h>

namespace strata::monitor {
namespace {

// Rank 0's pid and host: the job's key ends with the pid, and a door names the host.
struct rank0_facts {
  long long pid = 0;
  char host[64] = {0};
};

// How often the root looks for an ask (a stat per spool).
constexpr uint64_t ask_poll_ns = 100'000'000;

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

} // namespace

void send_rank0_facts(monitor_state& s, int root_world_rank) {
  rank0_facts facts;
  facts.pid = ::getpid();
  ::gethostname(facts.host, sizeof(facts.host) - 1);
  MPI_Send(&facts, sizeof(facts), MPI_BYTE, root_world_rank, hang_facts_tag, s.overlay);
}

hang_node::hang_node(monitor_state& s, const overlay::tree_layout& tree, int node)
    : root_(node == 0), leaf_children_(tree.children_are_leaves(node)),
      children_(tree.children(node)), leaves_(tree.leaves), tool_ranks_(tree.tool_count()) {
  if (!root_)
    return;
  rank0_facts facts;
  MPI_Recv(&facts, sizeof(facts), MPI_BYTE, 0, hang_facts_tag, s.overlay, MPI_STATUS_IGNORE);
  facts.host[sizeof(facts.host) - 1] = '\0';
  rank0_pid_ = facts.pid;
  rank0_host_ = facts.host;
  // The spools the profile may put the job's files in (its option spool, the install's, ...);
  // without the profile there are no state files to read.
  if (const auto* spools = static_cast<const char*>(s.host->lookup("profile.spools", "text/v1"))) {
    std::istringstream in(spools);
    for (std::string dir; std::getline(in, dir);)
      if (!dir.empty())
        spools_.push_back(dir);
  }
  doors_.assign(spools_.size(), false);
}

void hang_node::close() {
  for (size_t i = 0; i < spools_.size(); ++i)
    if (doors_[i])
      hang::remove_tree_door(spools_[i], rank0_pid_);
  doors_.assign(spools_.size(), false);
}

void hang_node::poll(const send_fn& send) {
  if (!root_ || spools_.empty())
    return;
  const uint64_t now = mono_ns();
  if (now < next_poll_ns_)
    return;
  next_poll_ns_ = now + ask_poll_ns;
  // A door in each of the spools that exists (rank 0's files are in one of them, which the
  // profile may make after the tree starts: looked for again until it exists), asks looked for
  // in each.
  for (size_t i = 0; i < spools_.size(); ++i) {
    if (!doors_[i]) {
      doors_[i] = is_directory(spools_[i]) &&
                  hang::write_tree_door(spools_[i], rank0_pid_, tool_ranks_, rank0_host_);
      continue;
    }
    if (pending_)
      continue; // one ask at a time: the others wait in their files, each answered in turn
    if (std::optional<hang::tree_ask> ask = hang::next_tree_ask(spools_[i], rank0_pid_)) {
      ask_ = *ask;
      start(++asks_, ask->key, ask->spool, -1, send);
    }
  }
}

void hang_node::start(uint64_t id, const std::string& key, const std::string& spool, int parent,
                      const send_fn& send) {
  pending_.emplace();
  pending_->id = id;
  pending_->parent = parent;
  pending_->started_ns = mono_ns();
  if (leaf_children_) {
    std::vector<int32_t> ranks(children_.begin(), children_.end());
    pending_->merged = hang::read_rank_states(spool, key, ranks);
    finish(send);
    return;
  }
  pending_->waiting = children_.size();
  for (const int child : children_)
    send(leaves_ + child,
         overlay::packet{overlay::packet_kind::hang_ask, id, 0, key + "\n" + spool});
}

bool hang_node::on_packet(overlay::packet& p, int from_parent_rank, int child, const send_fn& send,
                          std::string& problem) {
  if (p.kind == overlay::packet_kind::hang_ask) {
    if (from_parent_rank < 0)
      return true;
    const size_t split = p.payload.find('\n');
    if (split == std::string::npos) {
      problem = "a hang ask without a spool";
      return true;
    }
    if (pending_)
      finish(send); // a parent's new ask replaces one it gave up on: answer what there is
    start(p.round, p.payload.substr(0, split), p.payload.substr(split + 1), from_parent_rank, send);
    return true;
  }
  if (p.kind != overlay::packet_kind::hang_states)
    return false;
  if (!pending_ || p.round != pending_->id || child < 0 || pending_->waiting == 0)
    return true; // an answer to an ask this node is no longer serving
  hang::batch_read_result part = hang::decode_batch(p.payload);
  pending_->bytes_in += p.payload.size();
  if (!part.ok())
    problem = "tool node child " + std::to_string(child) + ": " + part.error;
  else
    hang::merge_batch(pending_->merged, std::move(part.batch));
  if (--pending_->waiting == 0)
    finish(send);
  return true;
}

void hang_node::finish(const send_fn& send) {
  hang::state_batch& merged = pending_->merged;
  merged.tool_ranks += 1; // this one
  if (root_) {
    std::sort(merged.states.begin(), merged.states.end(),
              [](const hang::rank_state& a, const hang::rank_state& b) {
                return a.world_rank < b.world_rank;
              });
    // What the root received (its children's batches; nothing when it read the files itself)
    // and how long the whole ask took there, for the one who asked.
    merged.root_bytes = pending_->bytes_in;
    merged.merge_ns = mono_ns() - pending_->started_ns;
    (void)hang::answer_tree_ask(ask_, hang::encode_batch(merged));
  } else {
    send(pending_->parent,
         overlay::packet{overlay::packet_kind::hang_states, pending_->id,
                         static_cast<uint32_t>(merged.states.size()), hang::encode_batch(merged)});
  }
  pending_.reset();
}

} // namespace strata::monitor
