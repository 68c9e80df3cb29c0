#include "analyzer/anchor_probe.hpp"

#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace strata::analyze {

std::string probe_anchor(const std::string& anchor) {
  posix_spawn_file_actions_t actions;
  if (posix_spawn_file_actions_init(&actions) != 0)
    return {};
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::string program = "otf2-print";
  std::string all = "-A";
  char* argv[] = {program.data(), all.data(), const_cast<char*>(anchor.c_str()), nullptr};
  pid_t child = 0;
  const int spawned = posix_spawnp(&child, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    return {}; // no printer here: the reader opens the file as it would have
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

} // namespace strata::analyze
