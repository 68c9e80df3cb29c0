#include "analyzer/anchor_probe.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <mutex>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace strata::analyze {
namespace {

std::atomic<uint64_t> g_started{0};

// The verdicts on the last few anchors, newest first. A handful is plenty: a process analyses
// one archive at a time (the fuzz target many, one after the other), so the list stays small.
struct remembered {
  std::string bytes;
  std::string verdict;
};
constexpr size_t remembered_most = 8;
std::mutex g_lock;
std::deque<remembered> g_verdicts;

std::optional<std::string> remembered_verdict(const std::string& bytes) {
  const std::lock_guard<std::mutex> hold(g_lock);
  for (const remembered& r : g_verdicts)
    if (r.bytes == bytes)
      return r.verdict;
  return std::nullopt;
}

// The printer on the file: empty when it ended (or could not be started), else why not.
std::string run_printer(const std::string& anchor) {
  posix_spawn_file_actions_t actions;
  if (posix_spawn_file_actions_init(&actions) != 0)
    return {};
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  // -I: the anchor file alone (its properties included), a few hundred bytes whatever the
  // archive's size; -A would print every definition and event of the archive too.
  std::string program = "otf2-print";
  std::string info = "-I";
  char* argv[] = {program.data(), info.data(), const_cast<char*>(anchor.c_str()), nullptr};
  pid_t child = 0;
  const int spawned = posix_spawnp(&child, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    return {}; // no printer here: the reader opens the file as it would have
  g_started.fetch_add(1, std::memory_order_relaxed);
  constexpr auto limit = std::chrono::seconds(30);
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child)
      break;
    if (done < 0)
      return {};
    if (std::chrono::steady_clock::now() - start > limit) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      return "the OTF2 library did not finish reading it in 30 s";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // An exit with an error is one the library reported itself, which the reader reports too.
  if (WIFSIGNALED(status))
    return std::string("the OTF2 library fails reading it (") + ::strsignal(WTERMSIG(status)) + ")";
  return {};
}

} // namespace

std::optional<std::string> read_anchor_bytes(const std::string& anchor) {
  std::ifstream in(anchor, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad())
    return std::nullopt;
  return bytes;
}

void remember_anchor_verdict(const std::string& bytes, const std::string& verdict) {
  const std::lock_guard<std::mutex> hold(g_lock);
  for (auto r = g_verdicts.begin(); r != g_verdicts.end(); ++r)
    if (r->bytes == bytes) {
      g_verdicts.erase(r);
      break;
    }
  g_verdicts.push_front({bytes, verdict});
  if (g_verdicts.size() > remembered_most)
    g_verdicts.pop_back();
}

anchor_check check_anchor(const std::string& anchor) {
  anchor_check c;
  c.bytes = read_anchor_bytes(anchor);
  if (c.bytes) {
    if (std::optional<std::string> known = remembered_verdict(*c.bytes)) {
      c.verdict = std::move(*known);
      return c;
    }
  }
  c.verdict = run_printer(anchor);
  // Remembered only for the bytes the printer read: the file may have changed meanwhile.
  if (c.bytes && read_anchor_bytes(anchor) == c.bytes)
    remember_anchor_verdict(*c.bytes, c.verdict);
  else
    c.bytes.reset();
  return c;
}

std::string probe_anchor(const std::string& anchor) {
  return check_anchor(anchor).verdict;
}

uint64_t anchor_probes_started() {
  return g_started.load(std::memory_order_relaxed);
}

} // namespace strata::analyze
