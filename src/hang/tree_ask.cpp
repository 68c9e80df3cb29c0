#include "hang/tree_ask.hpp"

#include "common/atomic_file.hpp"
#include "common/process.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace strata::hang {
namespace {

constexpr std::string_view ask_magic = "strata.hang-ask/1";
constexpr std::string_view door_magic = "strata.hang-tree/2";
constexpr size_t max_ask_bytes = 8192;

std::optional<std::string> read_whole(const std::string& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::string bytes;
  char chunk[65536];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    bytes.append(chunk, static_cast<size_t>(in.gcount()));
    if (bytes.size() > limit)
      return std::nullopt;
  }
  return bytes;
}

// The root's door: how many tool ranks answer, and rank 0's host. nullopt when there is no door
// or it is of another version.
struct tree_door {
  int tool_ranks = 0;
  std::string host;
};

std::optional<tree_door> read_tree_door(const std::string& spool, int64_t rank0_pid) {
  const std::optional<std::string> bytes = read_whole(tree_door_path(spool, rank0_pid), 1024);
  if (!bytes || !bytes->starts_with(door_magic))
    return std::nullopt;
  std::istringstream fields(bytes->substr(door_magic.size()));
  tree_door door;
  fields >> door.tool_ranks >> door.host;
  return door;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

} // namespace

uint64_t monotonic_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

int64_t rank0_pid_of_key(const std::string& key) {
  const size_t dash = key.rfind('-');
  if (dash == std::string::npos || dash + 1 >= key.size() || key.size() - dash > 19)
    return 0;
  int64_t pid = 0;
  for (size_t i = dash + 1; i < key.size(); ++i) {
    if (key[i] < '0' || key[i] > '9')
      return 0;
    pid = pid * 10 + (key[i] - '0');
  }
  return pid;
}

std::string tree_door_path(const std::string& spool, int64_t rank0_pid) {
  return spool + "/tree-" + std::to_string(rank0_pid) + ".hang-door";
}

std::string tree_asks_dir(const std::string& spool, int64_t rank0_pid) {
  return spool + "/tree-" + std::to_string(rank0_pid) + ".hang-asks";
}

std::string tree_answer_path(const std::string& spool, const std::string& key,
                             const std::string& id) {
  return spool + "/" + key + ".hang-merged-" + id;
}

bool write_tree_door(const std::string& spool, int64_t rank0_pid, int tool_ranks,
                     const std::string& rank0_host) {
  // The directory first: a requester that sees the door can ask.
  const std::string asks = tree_asks_dir(spool, rank0_pid);
  if (::mkdir(asks.c_str(), 0755) != 0 && !is_directory(asks))
    return false;
  return common::write_atomically(tree_door_path(spool, rank0_pid),
                                  std::string(door_magic) + " " + std::to_string(tool_ranks) + " " +
                                      rank0_host + "\n",
                                  0644)
      .empty();
}

void remove_tree_door(const std::string& spool, int64_t rank0_pid) {
  ::unlink(tree_door_path(spool, rank0_pid).c_str()); // first: no new asks
  std::error_code ec;
  std::filesystem::remove_all(tree_asks_dir(spool, rank0_pid), ec);
}

std::optional<tree_ask> next_tree_ask(const std::string& spool, int64_t rank0_pid) {
  const std::string dir = tree_asks_dir(spool, rank0_pid);
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr)
    return std::nullopt;
  std::optional<tree_ask> found;
  while (!found) {
    const dirent* e = ::readdir(d);
    if (e == nullptr)
      break;
    const std::string name = e->d_name;
    // Not "." and "..", nor an ask still being written (write_atomically's temporary).
    if (name.starts_with('.') || name.find(".tmp.") != std::string::npos)
      continue;
    const std::string path = dir + "/" + name;
    const std::optional<std::string> bytes = read_whole(path, max_ask_bytes);
    if (!bytes)
      continue; // its requester stopped waiting meanwhile
    std::istringstream in(*bytes);
    std::string magic;
    tree_ask ask;
    ask.path = path;
    // The id and key become a file name: no path in them.
    auto plain = [](const std::string& s) {
      return !s.empty() && s.find('/') == std::string::npos && s != "." && s != "..";
    };
    if (std::getline(in, magic) && magic == ask_magic && std::getline(in, ask.id) &&
        std::getline(in, ask.key) && std::getline(in, ask.spool) && plain(ask.id) &&
        plain(ask.key) && rank0_pid_of_key(ask.key) == rank0_pid && is_directory(ask.spool))
      found = std::move(ask);
    else
      ::unlink(path.c_str());
  }
  ::closedir(d);
  return found;
}

bool answer_tree_ask(const tree_ask& ask, const std::string& batch_bytes) {
  const std::string answer = tree_answer_path(ask.spool, ask.key, ask.id);
  bool stays = common::write_atomically(answer, batch_bytes, 0644).empty();
  // Looked at after the answer is written: a requester that gives up removes its ask before any
  // answer, so either it finds this answer to remove or this finds its ask gone.
  if (stays && ::access(ask.path.c_str(), F_OK) != 0) {
    ::unlink(answer.c_str());
    stays = false;
  }
  ::unlink(ask.path.c_str());
  return stays;
}

state_batch read_rank_states(const std::string& spool, const std::string& key,
                             const std::vector<int32_t>& ranks) {
  state_batch batch;
  for (const int32_t rank : ranks) {
    const std::string path = spool + "/" + key + ".rank" + std::to_string(rank) + ".hang";
    if (::access(path.c_str(), F_OK) != 0) {
      batch.unread.push_back({rank, path + ": " + std::strerror(errno)});
      continue;
    }
    state_read_result read = read_state_file(path);
    if (!read.ok())
      batch.unread.push_back({rank, read.error});
    else if (read.state->world_rank != rank)
      batch.unread.push_back(
          {rank, path + ": holds rank " + std::to_string(read.state->world_rank)});
    else
      batch.states.push_back(std::move(*read.state));
  }
  return batch;
}

std::optional<tree_request> ask_tree(const std::string& spool, const std::string& key,
                                     const std::string& rank0_host) {
  const int64_t pid = rank0_pid_of_key(key);
  if (pid == 0)
    return std::nullopt;
  const std::optional<tree_door> door = read_tree_door(spool, pid);
  // A door of the same pid on another host (a spool shared by several nodes) is not this job's.
  if (!door || door->tool_ranks < 1 ||
      (!rank0_host.empty() && door->host.find(rank0_host) == std::string::npos))
    return std::nullopt;
  char id[64];
  std::snprintf(id, sizeof id, "%ld-%llu", static_cast<long>(::getpid()),
                static_cast<unsigned long long>(monotonic_ns()));
  tree_request request{tree_asks_dir(spool, pid) + "/" + id, tree_answer_path(spool, key, id),
                       monotonic_ns()};
  // The tool ranks may run in another directory: the spool as an absolute path.
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(spool, ec).string();
  const std::string text =
      std::string(ask_magic) + "\n" + id + "\n" + key + "\n" + (ec ? spool : absolute) + "\n";
  // No directory of asks: a root of an older door, or one that is ending.
  if (!common::write_atomically(request.ask_path, text, 0644).empty())
    return std::nullopt;
  return request;
}

std::optional<batch_read_result> poll_tree(const tree_request& request) {
  const std::optional<std::string> bytes = read_whole(request.answer_path, SIZE_MAX / 2);
  if (!bytes)
    return std::nullopt;
  ::unlink(request.answer_path.c_str());
  return decode_batch(*bytes);
}

void give_up(const tree_request& request) {
  ::unlink(request.ask_path.c_str());
  ::unlink(request.answer_path.c_str());
}

tree_watch::~tree_watch() {
  if (request_)
    give_up(*request_);
}

tree_watch::step tree_watch::look(const std::string& spool, const std::string& key,
                                  const std::string& rank0_host, state_batch& out,
                                  std::string& problem) {
  if (!request_) {
    request_ = ask_tree(spool, key, rank0_host);
    return request_ ? step::wait : step::files;
  }
  std::optional<batch_read_result> answer = poll_tree(*request_);
  if (!answer && monotonic_ns() - request_->started_ns < tree_answer_within_ns)
    return step::wait;
  if (!answer)
    give_up(*request_);
  request_.reset();
  if (answer && !answer->ok())
    problem = "the tree's answer is damaged (" + answer->error + ")";
  // A tree that read none of the states (its tool ranks on other nodes, without the spool): the
  // files.
  if (!answer || !answer->ok() || answer->batch.states.empty())
    return step::files;
  out = std::move(answer->batch);
  return step::answered;
}

void note_tree(diagnosis& d, const state_batch& batch) {
  d.tree_tool_ranks = batch.tool_ranks;
  d.tree_root_bytes = batch.root_bytes;
  d.tree_merge_ns = batch.merge_ns;
  for (const unread_rank& u : batch.unread)
    d.tree_unread.emplace_back(u.rank, u.why);
}

void remove_tree_files(const std::string& spool, const std::string& key) {
  const std::string answers = key + ".hang-merged-";
  if (DIR* d = ::opendir(spool.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (std::string_view(e->d_name).starts_with(answers))
        ::unlink((spool + "/" + e->d_name).c_str());
    ::closedir(d);
  }
  const int64_t pid = rank0_pid_of_key(key);
  if (pid <= 0)
    return;
  // Another process of that pid here may be a new job's rank 0, the door its root's.
  char here[256] = {0};
  ::gethostname(here, sizeof(here) - 1);
  const std::optional<tree_door> door = read_tree_door(spool, pid);
  const std::string host = door && !door->host.empty() ? door->host : std::string(here);
  if (host == here && common::process_runs(pid))
    return;
  remove_tree_door(spool, pid);
}

} // namespace strata::hang
