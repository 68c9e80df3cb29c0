#include "launch/launcher_child.hpp"

#include "common/exec_argv.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <poll.h>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace strata::launch {

bool read_launcher_line(const std::string& line, ended_process& found) {
  // Open MPI: "mpirun noticed that process rank 2 with PID 0 on node vm exited on signal 9
  // (Killed)." and "... process rank 1 with PID 123 on node vm exiting improperly".
  static const std::regex open_mpi(R"(process rank (\d+) with PID \d+ on node \S+ (.*?)\.?\s*$)");
  // MPICH: "=   PID 28218 RUNNING AT vm", then "=   EXIT CODE: 9" or "KILLED BY SIGNAL: 9 (...)".
  static const std::regex mpich_pid(R"(^=\s+PID (\d+) RUNNING AT \S+)");
  static const std::regex mpich_how(R"(^=\s+((EXIT CODE|KILLED BY SIGNAL): .*?)\s*$)");
  std::smatch m;
  if (std::regex_search(line, m, open_mpi)) {
    found = {std::atoi(m[1].str().c_str()), -1, m[2].str()};
    return true;
  }
  if (std::regex_search(line, m, mpich_pid)) {
    found = {-1, std::atol(m[1].str().c_str()), ""};
    return true;
  }
  if (found.pid >= 0 && found.how.empty() && std::regex_search(line, m, mpich_how)) {
    found.how = m[1].str();
    return true;
  }
  return false;
}

int tool_rank_that_ended_the_job(const ended_process& named, int first_ended, int app_ranks) {
  const int rank = named.rank >= 0 ? named.rank : first_ended;
  return rank >= app_ranks ? rank : -1;
}

std::string tool_rank_ended_line(int rank, const std::string& how, int app_ranks,
                                 const std::string& launcher_name) {
  const std::string application =
      app_ranks == 1 ? "rank 0" : "ranks 0-" + std::to_string(app_ranks - 1);
  return "strata: run: the process that ended the job (" +
         (how.empty() ? std::string("rank ") + std::to_string(rank)
                      : "rank " + std::to_string(rank) + ", " + how) +
         ") was one of the tool ranks the stack added, not the application's (" + application +
         "); " + launcher_name +
         " ends the whole job when one of its processes dies, so the application was stopped "
         "with it (a profile's records are partial: strata recover)";
}

int rank_in_environment(const std::string& environ, const std::string& marker) {
  bool marked = false;
  int rank = -1;
  for (size_t begin = 0; begin < environ.size();) {
    size_t end = environ.find('\0', begin);
    if (end == std::string::npos)
      end = environ.size();
    const std::string_view entry(environ.data() + begin, end - begin);
    if (entry == marker)
      marked = true;
    for (const std::string_view name : {"OMPI_COMM_WORLD_RANK=", "PMI_RANK="})
      if (entry.substr(0, name.size()) == name)
        rank = std::atoi(std::string(entry.substr(name.size())).c_str());
    begin = end + 1;
  }
  return marked ? rank : -1;
}

bool files_may_be_closed_from_stat(const std::string& stat) {
  // "PID (COMM) STATE PPID PGRP SESSION TTY TPGID FLAGS ... VSIZE(23) ...": COMM may hold spaces
  // and parentheses, so the fields are counted from the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos)
    return true;
  std::istringstream fields(stat.substr(close + 1));
  std::string state;
  fields >> state;
  std::vector<long long> numbers; // fields 4 to 23 (the terminal group may be -1)
  for (long long n = 0; numbers.size() < 20 && fields >> n;)
    numbers.push_back(n);
  if (state.empty() || numbers.size() < 20)
    return true;
  if (state == "Z" || state == "X" || state == "x")
    return true;
  // Exiting (PF_EXITING) and its memory already given up: the kernel gives up a process's memory
  // just before its files, so from here on they may be closed. An exiting process that still has
  // its memory, or one with SIGKILL only pending, has closed nothing yet.
  constexpr long long exiting_flag = 0x4;
  const long long flags = numbers[5], vsize = numbers[19];
  return (flags & exiting_flag) != 0 && vsize == 0;
}

std::string read_proc_file(const std::string& path) {
  // Plain reads: a process that ends while its file is read makes read() fail with ESRCH, which
  // std::filebuf turns into an exception.
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return text;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    text.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

bool files_may_be_closed(long pid) {
  const std::string stat = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  return stat.empty() || files_may_be_closed_from_stat(stat);
}

long next_rank_look_ms(long interval_ms, bool found_new, bool found_any, long since_launch_ms) {
  constexpr long first_ms = 20, longest_ms = 1000, starting_ms = 10000, last_look_ms = 60000;
  if (since_launch_ms >= last_look_ms)
    return -1;
  const bool starting = !found_any && since_launch_ms < starting_ms;
  return found_new || starting ? first_ms : std::min(interval_ms * 2, longest_ms);
}

namespace {

long ms_between(const timespec& from, const timespec& to) {
  return (to.tv_sec - from.tv_sec) * 1000L + (to.tv_nsec - from.tv_nsec) / 1000000L;
}

volatile sig_atomic_t g_child = 0;

void pass_on(int sig) {
  if (g_child > 0)
    ::kill(static_cast<pid_t>(g_child), sig);
}

// The job's ranks found in /proc so far, by pid: every process carrying the run's marker and a
// rank. Read while the job starts, until each rank is known.
void find_ranks(const std::string& marker, std::map<long, int>& ranks) {
  DIR* d = ::opendir("/proc");
  if (d == nullptr)
    return;
  while (const dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || ranks.count(pid) != 0)
      continue;
    const std::string environ = read_proc_file(std::string("/proc/") + e->d_name + "/environ");
    if (const int rank = rank_in_environment(environ, marker); rank >= 0)
      ranks[pid] = rank;
  }
  ::closedir(d);
}

// Which of the job's processes ended first, seen through a pidfd per process: the one whose end
// ended the job, where MPICH's launcher may name a process it stopped afterwards.
class end_watch {
  struct watched_process {
    int fd; // its pidfd
    long pid;
    int rank; // in the world
  };

public:
  end_watch() = default;
  end_watch(const end_watch&) = delete;
  end_watch& operator=(const end_watch&) = delete;
  ~end_watch() {
    for (const auto& entry : open_)
      ::close(entry.fd);
  }
  void add(long pid, int rank) {
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
    if (fd >= 0)
      open_.push_back({fd, pid, rank});
  }
  // The watched processes' descriptors, appended to `fds`.
  void fill(std::vector<pollfd>& fds) const {
    for (const auto& entry : open_)
      fds.push_back({entry.fd, POLLIN, 0});
  }
  // The processes `fds` (from `fill`, at `from`) say have ended. Those of the first wake that saw
  // any decide: one process alone is the first, if no other one may have closed its files then (see
  // files_may_be_closed_from_stat); several at once cannot be told apart, nor can anything be when
  // not every process was watched yet (`all_watched`): one may have ended before it was found.
  void seen(const std::vector<pollfd>& fds, size_t from, bool all_watched) {
    std::vector<int> ended;
    std::vector<watched_process> still;
    for (size_t i = 0; i < open_.size(); ++i) {
      if (fds[from + i].revents != 0) {
        ended.push_back(open_[i].rank);
        ::close(open_[i].fd);
      } else {
        still.push_back(open_[i]);
      }
    }
    open_ = std::move(still);
    if (!decided_ && !ended.empty()) {
      decided_ = true;
      const bool others_hold_their_files =
          std::none_of(open_.begin(), open_.end(),
                       [](const watched_process& p) { return files_may_be_closed(p.pid); });
      first_ = ended.size() == 1 && all_watched && others_hold_their_files ? ended.front() : -1;
    }
  }
  int first() const { return first_; } // -1: not known
private:
  std::vector<watched_process> open_;
  bool decided_ = false;
  int first_ = -1;
};

void write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return; // our own output is gone: the launcher's is still drained
    data += w;
    n -= static_cast<size_t>(w);
  }
}

} // namespace

int run_launcher_child(const launcher_job& job) {
  const int telling_fd = job.flavor == "mpich" ? STDOUT_FILENO : STDERR_FILENO;
  const std::string marker_value =
      std::to_string(::getpid()) + "-" + std::to_string(::time(nullptr));
  ::setenv(run_marker_variable, marker_value.c_str(), 1);
  const std::string marker = std::string(run_marker_variable) + "=" + marker_value;
  std::map<long, int> ranks; // pid -> world rank
  std::set<long> watched;    // the pids whose end is watched
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "strata: run: cannot make a pipe: %s\n", std::strerror(errno));
    return 127;
  }
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) {
    std::fprintf(stderr, "strata: run: cannot start %s: %s\n", job.args.front().c_str(),
                 std::strerror(errno));
    return 127;
  }
  if (child == 0) {
    ::dup2(pipe_fds[1], telling_fd);
    std::vector<std::string> args = job.args;
    std::vector<char*> argv = exec_argv(args);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "strata: run: cannot execute %s: %s (is %s installed?)\n",
                 job.args.front().c_str(), std::strerror(errno), job.flavor.c_str());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  g_child = child;
  // Ctrl-C reaches the launcher too (one process group): this process waits for it to end the
  // job. A signal sent to this process alone (a batch system's) is the launcher's to act on.
  struct sigaction ignore = {}, forward = {};
  ignore.sa_handler = SIG_IGN;
  forward.sa_handler = pass_on;
  ::sigaction(SIGINT, &ignore, nullptr);
  ::sigaction(SIGQUIT, &ignore, nullptr);
  ::sigaction(SIGPIPE, &ignore, nullptr);
  ::sigaction(SIGTERM, &forward, nullptr);
  ::sigaction(SIGHUP, &forward, nullptr);
  ::sigaction(SIGUSR1, &forward, nullptr);
  ::sigaction(SIGUSR2, &forward, nullptr);

  ended_process ended;
  end_watch ends;
  bool named = false;
  std::string line;
  char buffer[8192];
  int status = 0;
  bool exited = false;
  timespec launched = {}, next_look = {};
  ::clock_gettime(CLOCK_MONOTONIC, &launched);
  next_look = launched;
  long look_interval_ms = 20; // -1: no more looks
  for (;;) {
    timespec now = {};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    if (static_cast<int>(ranks.size()) < job.processes && look_interval_ms >= 0 &&
        ms_between(next_look, now) >= 0) {
      const size_t known = ranks.size();
      find_ranks(marker, ranks);
      if (ranks.size() > known)
        for (const auto& [pid, rank] : ranks)
          if (watched.insert(pid).second)
            ends.add(pid, rank);
      look_interval_ms = next_rank_look_ms(look_interval_ms, ranks.size() > known, !ranks.empty(),
                                           ms_between(launched, now));
      next_look = now;
      next_look.tv_nsec += std::max(look_interval_ms, 0L) * 1000000L;
      next_look.tv_sec += next_look.tv_nsec / 1000000000L;
      next_look.tv_nsec %= 1000000000L;
    }
    const bool looking = static_cast<int>(ranks.size()) < job.processes && look_interval_ms >= 0;
    std::vector<pollfd> fds{{pipe_fds[0], POLLIN, 0}};
    ends.fill(fds);
    // A process the launcher left behind may hold the pipe open: once the launcher has ended,
    // what is already written is read and no more is waited for.
    const int ready =
        ::poll(fds.data(), fds.size(),
               exited    ? 0
               : looking ? static_cast<int>(std::clamp(ms_between(now, next_look), 1L, 200L))
                         : 200);
    if (ready > 0)
      ends.seen(fds, 1, static_cast<int>(watched.size()) == job.processes);
    if (ready > 0 && fds[0].revents == 0)
      continue; // only processes ended
    if (ready > 0) {
      const ssize_t n = ::read(pipe_fds[0], buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      write_all(telling_fd, buffer, static_cast<size_t>(n));
      line.append(buffer, static_cast<size_t>(n));
      for (size_t end = line.find('\n'); end != std::string::npos; end = line.find('\n')) {
        named = read_launcher_line(line.substr(0, end), ended) || named;
        line.erase(0, end + 1);
      }
      if (line.size() > 65536)
        line.clear(); // no launcher writes such a line
      continue;
    }
    if (ready < 0 && errno != EINTR)
      break;
    if (exited)
      break;
    pid_t w = ::waitpid(child, &status, WNOHANG);
    if (w == child)
      exited = true;
  }
  ::close(pipe_fds[0]);
  while (!exited) {
    const pid_t w = ::waitpid(child, &status, 0);
    if (w == child || (w < 0 && errno != EINTR))
      exited = true;
  }
  g_child = 0;
  if (named) {
    const auto of_pid = ranks.find(ended.pid);
    const int rank_of_pid = of_pid == ranks.end() ? -1 : of_pid->second;
    const int tool = tool_rank_that_ended_the_job(ended, ends.first(), job.app_ranks);
    const bool launcher_named_it = ended.rank == tool || rank_of_pid == tool;
    if (tool >= 0)
      std::fprintf(stderr, "%s\n",
                   tool_rank_ended_line(tool, launcher_named_it ? ended.how : "", job.app_ranks,
                                        job.flavor == "mpich" ? "MPICH" : "Open MPI")
                       .c_str());
  }
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

} // namespace strata::launch
