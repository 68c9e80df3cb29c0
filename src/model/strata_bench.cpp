// strata-bench: the machine-model benchmark behind `strata bench` (Kluge, Knuepfer and Nagel,
// ICCS 2005, sections 4-8). For each operation and base point (p, b) it takes a sample of times,
// fits the error t - min(S) and writes t_max(p, b) to a strata.model/1 file; with --study it
// shows how t_max settles as the sample grows (the paper's Fig. 3).
//
// Measurement choices:
//  - Every call is timed alone: barrier on the point's communicator, then clock_gettime
//    (CLOCK_MONOTONIC) around one call on every rank. The barrier aligns the ranks so that a
//    call does not absorb the previous call's skew.
//  - Collectives and exchanges (Sendrecv, Isend/Irecv+Waitall) count the slowest rank per
//    call (MPI_MAX over ranks): the operation is over only when every rank is done.
//  - MPI_Send is a ping-pong between ranks 0 and 1 timed on rank 0 and halved: one clock
//    measures both ends, so clock offsets between ranks never enter.
//  - Point-to-point operations run at p = 2 (ranks 0 and 1) only; collectives at every
//    base process count on a communicator of the first p ranks while the others wait.
//  - b is the bytes one rank sends to one peer (Gather/Scatter/Allgather/Alltoall blocks, the
//    block each rank receives in Reduce_scatter); reductions sum MPI_UNSIGNED_CHAR so that
//    b = 1 is possible. Barrier has the single size b = 0.
//  - Warm-up calls precede every sample so that connection setup and first-touch page faults
//    stay out of it.
//  - SIGINT and SIGTERM only set a flag; an MPI_Allreduce of it at every point stops all ranks
//    at the same point, so MPI is finalized cleanly without MPI_Abort. Rank 0 then writes the
//    model with "partial": true and exits 128 + the signal. A checkpoint every two seconds
//    covers launchers that kill the ranks before they reach the next point.
//  - Every point gets the full sample, 4 MiB included: on two ranks a default run moves about
//    15 GB per operation, seconds at shared-memory speed, so no shrinking was needed to stay
//    within two minutes.
#include "common/atomic_file.hpp"
#include "model/grid.hpp"
#include "model/model_file.hpp"
#include "model/stats.hpp"

#include <mpi.h>

#include <exception>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <vector>

namespace {

namespace st = strata::stats;

volatile std::sig_atomic_t stop_signal = 0;

extern "C" void on_signal(int signo) {
  stop_signal = signo;
}

constexpr int tag = 7;
constexpr int warmup_calls = 5;

enum class combine { max_over_ranks, rank0_half };

struct operation {
  const char* name;
  bool point_to_point;
  combine how;
};

const std::vector<operation> all_operations = {
    {"MPI_Send", true, combine::rank0_half},
    {"MPI_Sendrecv", true, combine::max_over_ranks},
    {"MPI_Isend", true, combine::max_over_ranks},
    {"MPI_Barrier", false, combine::max_over_ranks},
    {"MPI_Bcast", false, combine::max_over_ranks},
    {"MPI_Reduce", false, combine::max_over_ranks},
    {"MPI_Allreduce", false, combine::max_over_ranks},
    {"MPI_Gather", false, combine::max_over_ranks},
    {"MPI_Scatter", false, combine::max_over_ranks},
    {"MPI_Allgather", false, combine::max_over_ranks},
    {"MPI_Alltoall", false, combine::max_over_ranks},
    {"MPI_Reduce_scatter", false, combine::max_over_ranks},
};

const operation* find_operation(const std::string& name) {
  for (const operation& op : all_operations)
    if (name == op.name)
      return &op;
  return nullptr;
}

struct options {
  std::string output = "model.json";
  int samples = 200;
  long long max_bytes = st::default_max_bytes;
  double quantile = 0.95;
  double window_s = 0; // 0: the timer resolution
  std::vector<const operation*> ops;
  const operation* study = nullptr;
  // Launchers hand the ranks' stderr over pipes, so `strata bench` tells whether its own
  // stderr is a terminal; "auto" asks isatty here.
  std::string progress = "auto";
};

// One line on stderr from rank 0; every rank returns the same verdict.
bool parse(int argc, char** argv, options& o, std::string& error) {
  std::string ops_list;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) {
      error = "missing value after " + arg;
      return false;
    }
    const std::string value = argv[++i];
    char* end = nullptr;
    errno = 0;
    if (arg == "-o") {
      o.output = value;
    } else if (arg == "--samples") {
      const long n = std::strtol(value.c_str(), &end, 10);
      if (*end != '\0' || errno != 0 || n < 10 || n > 10'000'000) {
        error = "--samples must be a whole number from 10 on, not " + value;
        return false;
      }
      o.samples = static_cast<int>(n);
    } else if (arg == "--max-bytes") {
      o.max_bytes = std::strtoll(value.c_str(), &end, 10);
      // Counts are ints and receive buffers hold p blocks, so stay far below INT_MAX.
      if (*end != '\0' || errno != 0 || o.max_bytes < 1 || o.max_bytes > (1LL << 30)) {
        error = "--max-bytes must be from 1 to 1073741824, not " + value;
        return false;
      }
    } else if (arg == "--quantile") {
      o.quantile = std::strtod(value.c_str(), &end);
      if (*end != '\0' || errno != 0 || !(o.quantile > 0 && o.quantile < 1)) {
        error = "--quantile must lie strictly between 0 and 1, not " + value;
        return false;
      }
    } else if (arg == "--window-s") {
      o.window_s = std::strtod(value.c_str(), &end);
      if (*end != '\0' || errno != 0 || !(o.window_s > 0 && o.window_s < 1)) {
        error = "--window-s must be a positive number of seconds below 1, not " + value;
        return false;
      }
    } else if (arg == "--progress") {
      if (value != "auto" && value != "bar" && value != "lines") {
        error = "--progress must be auto, bar or lines, not " + value;
        return false;
      }
      o.progress = value;
    } else if (arg == "--ops") {
      ops_list = value;
    } else if (arg == "--study") {
      o.study = find_operation(value);
      if (o.study == nullptr) {
        error = "unknown operation " + value + " for --study";
        return false;
      }
    } else {
      error = "unknown option " + arg;
      return false;
    }
  }
  if (ops_list.empty()) {
    for (const operation& op : all_operations)
      o.ops.push_back(&op);
    return true;
  }
  size_t start = 0;
  while (start <= ops_list.size()) {
    const size_t comma = std::min(ops_list.find(',', start), ops_list.size());
    const std::string name = ops_list.substr(start, comma - start);
    const operation* op = find_operation(name);
    if (op == nullptr) {
      error = "unknown operation \"" + name + "\" in --ops";
      return false;
    }
    if (std::find(o.ops.begin(), o.ops.end(), op) == o.ops.end())
      o.ops.push_back(op);
    start = comma + 1;
  }
  return true;
}

std::int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The smallest step clock_gettime shows; clock_getres claims 1 ns even where reading the
// clock takes tens of nanoseconds, and windows below what can be seen only split noise.
double clock_granularity_s() {
  std::int64_t best = INT64_MAX;
  for (int i = 0; i < 2000; ++i) {
    const std::int64_t a = now_ns();
    std::int64_t b = now_ns();
    while (b == a)
      b = now_ns();
    best = std::min(best, b - a);
  }
  return static_cast<double>(best) * 1e-9;
}

struct buffers {
  std::vector<unsigned char> send, recv;
  std::vector<int> counts;
};

// One call of `op` with b bytes on `comm`; every rank of comm calls it.
void call(const operation& op, MPI_Comm comm, int rank, int b, buffers& buf) {
  unsigned char* s = buf.send.data();
  unsigned char* r = buf.recv.data();
  const std::string name = op.name;
  const int partner = rank ^ 1;
  if (name == "MPI_Send") {
    if (rank == 0) {
      MPI_Send(s, b, MPI_BYTE, 1, tag, comm);
      MPI_Recv(r, b, MPI_BYTE, 1, tag, comm, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(r, b, MPI_BYTE, 0, tag, comm, MPI_STATUS_IGNORE);
      MPI_Send(s, b, MPI_BYTE, 0, tag, comm);
    }
  } else if (name == "MPI_Sendrecv") {
    MPI_Sendrecv(s, b, MPI_BYTE, partner, tag, r, b, MPI_BYTE, partner, tag, comm,
                 MPI_STATUS_IGNORE);
  } else if (name == "MPI_Isend") {
    MPI_Request req[2];
    MPI_Irecv(r, b, MPI_BYTE, partner, tag, comm, &req[0]);
    MPI_Isend(s, b, MPI_BYTE, partner, tag, comm, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
  } else if (name == "MPI_Barrier") {
    MPI_Barrier(comm);
  } else if (name == "MPI_Bcast") {
    MPI_Bcast(s, b, MPI_BYTE, 0, comm);
  } else if (name == "MPI_Reduce") {
    MPI_Reduce(s, r, b, MPI_UNSIGNED_CHAR, MPI_SUM, 0, comm);
  } else if (name == "MPI_Allreduce") {
    MPI_Allreduce(s, r, b, MPI_UNSIGNED_CHAR, MPI_SUM, comm);
  } else if (name == "MPI_Gather") {
    MPI_Gather(s, b, MPI_BYTE, r, b, MPI_BYTE, 0, comm);
  } else if (name == "MPI_Scatter") {
    MPI_Scatter(s, b, MPI_BYTE, r, b, MPI_BYTE, 0, comm);
  } else if (name == "MPI_Allgather") {
    MPI_Allgather(s, b, MPI_BYTE, r, b, MPI_BYTE, comm);
  } else if (name == "MPI_Alltoall") {
    MPI_Alltoall(s, b, MPI_BYTE, r, b, MPI_BYTE, comm);
  } else if (name == "MPI_Reduce_scatter") {
    std::fill(buf.counts.begin(), buf.counts.end(), b);
    MPI_Reduce_scatter(s, r, buf.counts.data(), MPI_UNSIGNED_CHAR, MPI_SUM, comm);
  }
}

// n times of `op` at b bytes on comm; the combined times on comm's rank 0, empty elsewhere.
std::vector<double> take_sample(const operation& op, MPI_Comm comm, int b, int n, buffers& buf) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  for (int i = 0; i < warmup_calls; ++i) {
    MPI_Barrier(comm);
    call(op, comm, rank, b, buf);
  }
  std::vector<double> times(static_cast<size_t>(n));
  for (double& t : times) {
    MPI_Barrier(comm);
    const std::int64_t start = now_ns();
    call(op, comm, rank, b, buf);
    t = static_cast<double>(now_ns() - start) * 1e-9;
  }
  if (op.how == combine::rank0_half)
    for (double& t : times)
      t = rank == 0 ? t / 2 : 0.0;
  // One reduction per sample, after the timed calls, so that it never disturbs them.
  std::vector<double> combined(rank == 0 ? times.size() : 0);
  MPI_Reduce(times.data(), combined.data(), n, MPI_DOUBLE, MPI_MAX, 0, comm);
  return combined;
}

std::string iso_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string mpi_library() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string line(text, static_cast<size_t>(std::max(length, 0)));
  line = line.substr(0, line.find_first_of("\r\n"));
  // Open MPI and MPICH append build details after a comma or tab; the name and version lead.
  line = line.substr(0, line.find_first_of(",\t"));
  while (!line.empty() && (line.back() == ' ' || line.back() == '\0'))
    line.pop_back();
  return line;
}

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

// Whole or absent (common/atomic_file.hpp), so that a reader (or an interrupted run) never sees
// half a file; with the permissions of any file the user writes (0666 less the umask).
bool write_output(const std::string& path, const std::string& text) {
  const std::string error = strata::common::write_atomically(path, text, 0666);
  if (!error.empty())
    std::fprintf(stderr, "strata: error: cannot write %s\n", error.c_str());
  return error.empty();
}

// Latency and bandwidth of every measured operation from the minima at its largest process
// count: the run's own job size, and the minimum is what the hardware can do.
void fit_routines(strata::model::machine_model& model) {
  model.routines.clear();
  for (const auto& [name, points] : model.operations) {
    if (points.empty())
      continue;
    std::uint64_t top = 0;
    for (const strata::model::base_point& pt : points)
      top = std::max(top, pt.p);
    std::vector<std::pair<double, double>> line;
    for (const strata::model::base_point& pt : points)
      if (pt.p == top)
        line.emplace_back(static_cast<double>(pt.b), pt.min_s);
    const st::line_fit fit = st::fit_latency_bandwidth(line);
    if (fit.ok())
      model.routines[name] = {fit.latency_s, fit.bytes_per_s};
  }
}

class progress {
public:
  progress(bool on, bool tty, size_t total) : on_(on), tty_(tty), total_(total) {}

  void point(const char* op, std::uint64_t p, std::uint64_t b) {
    ++done_;
    if (!on_ || !tty_)
      return;
    constexpr int width = 30;
    const size_t filled = total_ == 0 ? width : done_ * width / total_;
    std::string bar(filled, '#');
    bar.resize(width, '.');
    std::fprintf(stderr, "\r[%s] %3zu%% %s p=%llu b=%llu\033[K", bar.c_str(),
                 total_ == 0 ? 100 : done_ * 100 / total_, op, static_cast<unsigned long long>(p),
                 static_cast<unsigned long long>(b));
  }

  void operation_done(const char* op, size_t points, double seconds) {
    if (!on_ || tty_)
      return;
    std::fprintf(stderr, "strata-bench: %s: %zu points in %.1f s (%zu/%zu)\n", op, points, seconds,
                 done_, total_);
  }

  void finish() {
    if (on_ && tty_)
      std::fprintf(stderr, "\r\033[K");
  }

private:
  bool on_, tty_;
  size_t total_, done_ = 0;
};

std::vector<int> study_sizes(int largest) {
  std::vector<int> out;
  for (int decade = 10; decade <= largest; decade *= 10)
    for (int step : {1, 2, 5})
      if (decade * step <= largest)
        out.push_back(decade * step);
  if (out.empty() || out.back() != largest)
    out.push_back(largest);
  return out;
}

// Fig. 3 of the paper: t_max of the first n times of one long sample, for growing n.
int run_study(const options& o, MPI_Comm world, int world_size, double window_s) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  const operation& op = *o.study;
  if (op.point_to_point && world_size < 2) {
    if (rank == 0)
      std::fprintf(stderr, "strata: error: %s needs 2 or more ranks\n", op.name);
    return 2;
  }
  const int p = op.point_to_point ? 2 : world_size;
  const std::uint64_t b =
      std::string(op.name) == "MPI_Barrier" ? 0 : std::min<std::uint64_t>(1000, o.max_bytes);
  // The paper's sample held 3000 times; fewer would end the table before t_max settles.
  const int largest = std::max(o.samples, 2000);
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(world, rank < p ? 0 : MPI_UNDEFINED, rank, &comm);
  std::vector<double> times;
  if (comm != MPI_COMM_NULL) {
    buffers buf;
    buf.send.assign(static_cast<size_t>(b) * static_cast<size_t>(p) + 1, 1);
    buf.recv.assign(buf.send.size(), 0);
    buf.counts.assign(static_cast<size_t>(p), 0);
    times = take_sample(op, comm, static_cast<int>(b), largest, buf);
    MPI_Comm_free(&comm);
  }
  if (rank != 0)
    return 0;
  nlohmann::ordered_json doc = {
      {"schema", "strata.bench-study/1"}, {"operation", op.name}, {"p", p}, {"b", b},
      {"quantile", o.quantile},           {"window_s", window_s}};
  doc["rows"] = nlohmann::ordered_json::array();
  std::printf("%s  p=%d  b=%llu  quantile=%g  window=%.3g s\n", op.name, p,
              static_cast<unsigned long long>(b), o.quantile, window_s);
  std::printf("%8s %14s %14s %12s %10s %5s %9s\n", "n", "min_s", "t_max_s", "model", "chi2", "dof",
              "accepted");
  for (const int n : study_sizes(largest)) {
    const std::vector<double> head(times.begin(), times.begin() + n);
    const st::fit_result fit = st::fit_sample(head, window_s, o.quantile);
    if (fit.status == st::fit_status::invalid_input ||
        fit.status == st::fit_status::too_few_samples) {
      std::fprintf(stderr, "strata: warning: n=%d: %s\n", n, fit.message.c_str());
      continue;
    }
    const strata::model::base_point pt =
        strata::model::make_point(static_cast<std::uint64_t>(p), b, fit);
    std::printf("%8d %14.9f %14.9f %12s %10.2f %5llu %9s\n", n, pt.min_s, pt.t_max_s,
                pt.model.c_str(), pt.chi2, static_cast<unsigned long long>(pt.dof),
                pt.accepted ? "yes" : "no");
    doc["rows"].push_back({{"n", n},
                           {"min_s", pt.min_s},
                           {"median_s", pt.median_s},
                           {"t_max_s", pt.t_max_s},
                           {"model", pt.model},
                           {"chi2", pt.chi2},
                           {"dof", pt.dof},
                           {"p_value", pt.p_value},
                           {"accepted", pt.accepted}});
  }
  std::fflush(stdout);
  return write_output(o.output, doc.dump(2) + "\n") ? 0 : 1;
}

int run_benchmark(const options& o, MPI_Comm world, int world_size, double window_s) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  const std::vector<std::uint64_t> counts = st::base_process_counts(world_size);
  const std::vector<std::uint64_t> sizes = st::base_message_sizes(o.max_bytes);

  // One communicator per process count, made up front: splitting is collective over the
  // world and must not happen while some ranks are already measuring.
  std::map<std::uint64_t, MPI_Comm> comms;
  for (const std::uint64_t p : counts) {
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Comm_split(world, static_cast<std::uint64_t>(rank) < p ? 0 : MPI_UNDEFINED, rank, &c);
    comms[p] = c;
  }

  struct plan_item {
    const operation* op;
    std::vector<std::uint64_t> ps, bs;
  };
  std::vector<plan_item> plan;
  size_t total = 0;
  for (const operation* op : o.ops) {
    plan_item item{op, {}, {}};
    if (op->point_to_point) {
      if (world_size >= 2)
        item.ps = {2};
    } else {
      item.ps = counts;
    }
    if (std::string(op->name) == "MPI_Barrier")
      item.bs = {0};
    else
      item.bs = sizes;
    total += item.ps.size() * item.bs.size();
    plan.push_back(item);
  }

  buffers buf;
  buf.send.assign(static_cast<size_t>(o.max_bytes) * static_cast<size_t>(world_size), 1);
  buf.recv.assign(buf.send.size(), 0);
  buf.counts.assign(static_cast<size_t>(world_size), 0);

  strata::model::machine_model model;
  model.machine = {host_name(), mpi_library(), static_cast<std::uint64_t>(world_size), iso_now(),
                   window_s};
  model.quantile = o.quantile;
  model.partial = true;
  const bool tty = o.progress == "bar" || (o.progress == "auto" && ::isatty(STDERR_FILENO) == 1);
  progress bar(rank == 0, tty, total);
  if (rank == 0 && !tty)
    std::fprintf(stderr, "strata-bench: %d ranks, %zu operations, %zu points, window %.3g s\n",
                 world_size, plan.size(), total, window_s);

  auto save = [&](bool partial) {
    model.partial = partial;
    fit_routines(model);
    return write_output(o.output, strata::model::write_model(model));
  };
  std::int64_t last_save = now_ns();
  int stopped = 0;
  for (const plan_item& item : plan) {
    const std::int64_t op_start = now_ns();
    size_t points = 0;
    for (const std::uint64_t p : item.ps) {
      for (const std::uint64_t b : item.bs) {
        // All ranks agree at every point whether to go on, so that a signal seen by any of
        // them stops everyone at the same place and MPI can still be finalized cleanly.
        int local = stop_signal, any = 0;
        MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, world);
        if (any != 0) {
          stopped = any;
          break;
        }
        const MPI_Comm comm = comms[p];
        std::vector<double> times;
        if (comm != MPI_COMM_NULL)
          times = take_sample(*item.op, comm, static_cast<int>(b), o.samples, buf);
        ++points;
        bar.point(item.op->name, p, b);
        if (rank != 0)
          continue;
        const st::fit_result fit = st::fit_sample(times, window_s, o.quantile);
        if (fit.status == st::fit_status::invalid_input ||
            fit.status == st::fit_status::too_few_samples) {
          std::fprintf(stderr, "\nstrata: warning: %s p=%llu b=%llu: %s\n", item.op->name,
                       static_cast<unsigned long long>(p), static_cast<unsigned long long>(b),
                       fit.message.c_str());
          continue;
        }
        model.operations[item.op->name].push_back(strata::model::make_point(p, b, fit));
        // A checkpoint now and then keeps a partial model on disk even when the launcher
        // kills the ranks before they see the signal.
        if (now_ns() - last_save > 2'000'000'000) {
          save(true);
          last_save = now_ns();
        }
      }
      if (stopped != 0)
        break;
    }
    if (stopped != 0)
      break;
    bar.operation_done(item.op->name, points, static_cast<double>(now_ns() - op_start) * 1e-9);
  }
  bar.finish();
  for (auto& [p, c] : comms)
    if (c != MPI_COMM_NULL)
      MPI_Comm_free(&c);
  if (rank != 0)
    return stopped != 0 ? 128 + stopped : 0;
  const bool saved = save(stopped != 0);
  if (stopped != 0) {
    std::fprintf(stderr, "strata: interrupted (signal %d); partial model written to %s\n", stopped,
                 o.output.c_str());
    return 128 + stopped;
  }
  if (saved)
    std::fprintf(stderr, "strata-bench: model written to %s\n", o.output.c_str());
  return saved ? 0 : 1;
}

} // namespace

namespace {
int run_main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  // After MPI_Init, which may install handlers of its own.
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  options o;
  std::string error;
  int rc = 0;
  if (!parse(argc, argv, o, error)) {
    if (rank == 0)
      std::fprintf(stderr, "strata: error: %s\n", error.c_str());
    rc = 2;
  } else {
    double window_s = o.window_s;
    if (window_s == 0) {
      window_s = std::max(MPI_Wtick(), clock_granularity_s());
      // Ranks may see different granularities; rank 0's fits use the coarsest.
      MPI_Allreduce(MPI_IN_PLACE, &window_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    rc = o.study != nullptr ? run_study(o, MPI_COMM_WORLD, size, window_s)
                            : run_benchmark(o, MPI_COMM_WORLD, size, window_s);
  }
  MPI_Finalize();
  return rc;
}
} // namespace

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    // Out of memory or a broken model: say so, and take the whole job down with this rank.
    std::fprintf(stderr, "strata-bench: error: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return 2;
}
