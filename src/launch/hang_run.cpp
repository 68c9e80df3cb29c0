#include "launch/hang_run.hpp"
#include "common/exec_argv.hpp"
#include "hang/diagnose.hpp"
#include "hang/running_job.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

namespace strata::launch {
namespace {

volatile sig_atomic_t launcher_pid = 0;

// Ctrl-C and a batch system's SIGTERM reach the launcher too when only this process gets them.
void forward_signal(int sig) {
  if (launcher_pid > 0)
    ::kill(launcher_pid, sig);
}

// The launcher's exit as a shell gives it: its status, or 128 + the signal that ended it.
int exit_code(int wstatus) {
  if (WIFEXITED(wstatus))
    return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus))
    return 128 + WTERMSIG(wstatus);
  return 1;
}

// Ends the launcher (which ends the ranks), SIGKILL if it has not gone within 10 s.
void end_launcher(pid_t child) {
  ::kill(child, SIGTERM);
  for (int waited = 0; waited < 100; ++waited) {
    int wstatus = 0;
    if (::waitpid(child, &wstatus, WNOHANG) == child)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(child, SIGKILL);
  int wstatus = 0;
  ::waitpid(child, &wstatus, 0);
}

// The spool and key of the job whose state files `dir` links to, from rank 0's link.
void find_job(const std::string& dir, std::string& spool, std::string& key) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.ends_with(".rank0.hang"))
      continue;
    const fs::path target = fs::read_symlink(e.path(), ec);
    if (ec)
      return;
    spool = target.parent_path().string();
    key = name.substr(0, name.size() - std::string_view(".rank0.hang").size());
    return;
  }
}

} // namespace

std::string make_hang_watch_dir(std::string& error) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/strata-hang-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    error = "cannot make a directory for the job's hang states in " + pattern + " (" +
            std::strerror(errno) + ")";
    return "";
  }
  return pattern;
}

int run_watching_hangs(const std::vector<std::string>& args, const std::string& dir,
                       const hang_watch_settings& settings) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t child = ::fork();
  if (child < 0) {
    std::fprintf(stderr, "strata: error: cannot start %s (%s)\n", args.front().c_str(),
                 std::strerror(errno));
    return 127;
  }
  if (child == 0) {
    std::vector<std::string> copy = args;
    std::vector<char*> argv = exec_argv(copy);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "strata: error: cannot execute %s\n", args.front().c_str());
    std::_Exit(127);
  }
  launcher_pid = child;
  std::signal(SIGINT, forward_signal);
  std::signal(SIGTERM, forward_signal);
  std::signal(SIGHUP, forward_signal);
  const auto threshold = static_cast<uint64_t>(settings.after_s * 1e9);
  hang::running_job job; // its spool and key once rank 0 linked its file
  job.files.inputs = {dir};
  bool reported = false;
  hang::tree_watch tree;
  int status = -1;
  while (status < 0) {
    int wstatus = 0;
    const pid_t done = ::waitpid(child, &wstatus, WNOHANG);
    if (done == child) {
      status = exit_code(wstatus);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (reported)
      continue;
    // Under the monitor's tree its tool ranks read the files (rank 0's link says where they are).
    if (job.spool.empty())
      find_job(dir, job.spool, job.key);
    // No rank has its file yet, one is being made, or the tree not answered yet: a later look.
    const hang::job_look look = hang::look_at_job(tree, job, hang::realtime_ns(), threshold);
    if (look.result != hang::job_look::step::judged)
      continue;
    const hang::diagnosis& d = look.d;
    if (d.result != hang::verdict::hang)
      continue;
    reported = true;
    const std::string text = hang::format_text(d);
    std::fprintf(stderr,
                 "strata: the job hangs: a rank has waited over %g s inside one MPI call and no "
                 "rank completed a call meanwhile.\n%s",
                 settings.after_s, text.c_str());
    if (settings.abort) {
      std::fprintf(stderr, "strata: ending the job (--on-hang abort)\n");
      std::fflush(stderr);
      end_launcher(child);
      status = 3;
    }
    std::fflush(stderr);
  }
  launcher_pid = 0;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return status;
}

} // namespace strata::launch
