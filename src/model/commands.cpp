#include "model/commands.hpp"
#include "common/exec_argv.hpp"

#include "launch/launch.hpp"
#include "model/model_file.hpp"

#include <CLI/CLI.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace strata::bench {
namespace {

constexpr const char* operations[] = {"MPI_Send",      "MPI_Sendrecv", "MPI_Isend",
                                      "MPI_Barrier",   "MPI_Bcast",    "MPI_Reduce",
                                      "MPI_Allreduce", "MPI_Gather",   "MPI_Scatter",
                                      "MPI_Allgather", "MPI_Alltoall", "MPI_Reduce_scatter"};

std::string program_of(const std::string& prefix, const std::string& flavor) {
  return prefix + "/lib/strata/" + flavor + "/strata-bench";
}

// 17 digits read back to the same double; 6 suit a message.
std::string number(double value, int digits) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.*g", digits, value);
  return text;
}

// The launcher's verdict on an interrupted run varies (Hydra exits 0 after forwarding Ctrl-C),
// so the model file says whether the run was complete.
bool model_is_partial(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const model::model_read_result read = model::read_model(text.str());
  return read.ok() && read.model->partial;
}

} // namespace

bool known_operation(const std::string& name) {
  for (const char* op : operations)
    if (name == op)
      return true;
  return false;
}

std::string check_options(const bench_options& o) {
  if (o.ranks < 1)
    return "-np must be 1 or more, not " + std::to_string(o.ranks);
  if (o.samples < 10)
    return "--samples must be 10 or more (the fit needs them), not " + std::to_string(o.samples);
  if (!(o.quantile > 0 && o.quantile < 1))
    return "--quantile must lie strictly between 0 and 1, not " + number(o.quantile, 6);
  if (o.max_bytes < 1 || o.max_bytes > (1LL << 30))
    return "--max-bytes must be from 1 to 1073741824, not " + std::to_string(o.max_bytes);
  if (o.output.empty())
    return "-o needs a file name";
  if (!o.mpi.empty() && o.mpi != "openmpi" && o.mpi != "mpich")
    return "--mpi must be openmpi or mpich, not " + o.mpi;
  if (o.window_s != 0 && !(o.window_s > 0 && o.window_s < 1))
    return "--window-s must be a positive number of seconds below 1, not " + number(o.window_s, 6);
  if (!o.study.empty() && !known_operation(o.study))
    return "unknown operation " + o.study + " for --study";
  size_t start = 0;
  while (!o.ops.empty() && start <= o.ops.size()) {
    const size_t comma = std::min(o.ops.find(',', start), o.ops.size());
    const std::string name = o.ops.substr(start, comma - start);
    if (!known_operation(name))
      return "unknown operation \"" + name + "\" in --ops";
    start = comma + 1;
  }
  return "";
}

int bench_command(const bench_options& o) {
  if (const std::string why = check_options(o); !why.empty()) {
    std::fprintf(stderr, "strata: error: %s\n", why.c_str());
    return 2;
  }
  const std::string prefix =
      o.prefix.empty() ? launch::find_layout(launch::self_executable()).prefix : o.prefix;
  std::string flavor = o.mpi;
  if (flavor.empty())
    flavor = ::access(program_of(prefix, "openmpi").c_str(), X_OK) == 0 ? "openmpi" : "mpich";
  const std::string program = program_of(prefix, flavor);
  if (::access(program.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "strata: error: %s is missing (was Strata built with %s?)\n",
                 program.c_str(), flavor.c_str());
    return 2;
  }
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 0 && o.ranks > cores)
    // Every sample is barrier-aligned, so each one waits for a descheduled rank; MPICH's ranks
    // spin through their time slices while they wait (Open MPI yields when oversubscribed):
    // 4 ranks on 2 cores took 39 s with Open MPI and over 15 minutes with MPICH.
    std::fprintf(stderr,
                 "strata: note: %d ranks on %ld cores: timings include descheduling and the "
                 "build may take very long%s\n",
                 o.ranks, cores, flavor == "mpich" ? " (MPICH spins while waiting)" : "");
  std::vector<std::string> args = launch::local_launch(flavor, o.ranks);
  // A relative -o must name the file in the caller's directory, and so it does: the launcher
  // starts the ranks in its own working directory.
  args.insert(args.end(),
              {program, "-o", o.output, "--samples", std::to_string(o.samples), "--max-bytes",
               std::to_string(o.max_bytes), "--quantile", number(o.quantile, 17)});
  args.insert(args.end(), {"--progress", ::isatty(STDERR_FILENO) == 1 ? "bar" : "lines"});
  if (!o.ops.empty())
    args.insert(args.end(), {"--ops", o.ops});
  if (!o.study.empty())
    args.insert(args.end(), {"--study", o.study});
  if (o.window_s > 0)
    args.insert(args.end(), {"--window-s", number(o.window_s, 17)});
  std::vector<char*> argv = exec_argv(args);
  std::fflush(stdout);
  std::fflush(stderr);
  // A child rather than exec: Ctrl-C reaches the launcher and the ranks through the process
  // group, while this process waits to turn a partial model into a non-zero status.
  const pid_t child = ::fork();
  if (child == 0) {
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "strata: error: cannot execute %s (is %s installed?)\n", argv[0],
                 flavor.c_str());
    std::_Exit(127);
  }
  if (child < 0) {
    std::fprintf(stderr, "strata: error: cannot start %s\n", argv[0]);
    return 127;
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGTERM, &ignore, &old_term);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (rc == 0 && o.study.empty() && model_is_partial(o.output))
    rc = 130;
  return rc;
}

namespace {
class model_commands final : public cli::wing_commands {
public:
  explicit model_commands(CLI::App& strata) {
    bench_ = strata.add_subcommand(
        "bench", "measure what each MPI operation should cost here: the machine model");
    bench_->add_option("-n,--np", o_.ranks, "ranks (base points up to this size)")
        ->check(CLI::Range(2, 1 << 16));
    bench_->add_option("-o,--output", o_.output, "model file to write");
    bench_->add_option("--mpi", o_.mpi, "MPI implementation")
        ->check(CLI::IsMember({"openmpi", "mpich"}));
    bench_->add_option("--samples", o_.samples, "sample size per base point");
    bench_->add_option("--max-bytes", o_.max_bytes, "largest message size");
    bench_->add_option("--quantile", o_.quantile, "quantile of t_max");
    bench_->add_option("--ops", o_.ops, "operations (default: all)");
    bench_->add_option("--window-s", o_.window_s,
                       "fit window in seconds (default: the timer's resolution)");
    bench_->add_option("--study", o_.study, "t_max against sample size for one operation");
  }

  [[nodiscard]] std::optional<int> run() const override {
    if (bench_->parsed())
      return bench_command(o_);
    return std::nullopt;
  }

private:
  bench_options o_;
  CLI::App* bench_ = nullptr;
};
} // namespace

std::unique_ptr<cli::wing_commands> add_model_commands(CLI::App& strata) {
  return std::make_unique<model_commands>(strata);
}

} // namespace strata::bench
