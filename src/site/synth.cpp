#include "site/synth.hpp"

#include "common/atomic_file.hpp"
#include "site/parse.hpp"
#include "site/store.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <unistd.h>

namespace strata::site {

namespace {

struct routine_mix {
  const char* name;
  double weight;      // share of the application's MPI time
  double us_per_call; // typical time per call
  bool moves_data;
  bool collective;
};

// Application profiles: which routines take the MPI time of a user's code.
const std::vector<std::vector<routine_mix>>& profiles() {
  static const std::vector<std::vector<routine_mix>> p = {
      // halo exchange with non-blocking calls and a global reduction
      {{"MPI_Isend", 0.08, 3, true, false},
       {"MPI_Irecv", 0.05, 2, true, false},
       {"MPI_Waitall", 0.55, 150, false, false},
       {"MPI_Allreduce", 0.30, 60, true, true},
       {"MPI_Cart_create", 0.002, 5000, false, false},
       {"MPI_Wtime", 0.0005, 0.05, false, false}},
      // blocking point to point
      {{"MPI_Send", 0.30, 40, true, false},
       {"MPI_Recv", 0.50, 90, true, false},
       {"MPI_Sendrecv", 0.12, 70, true, false},
       {"MPI_Barrier", 0.08, 300, false, true}},
      // spectral code: transposes
      {{"MPI_Alltoall", 0.70, 2500, true, true},
       {"MPI_Allreduce", 0.10, 80, true, true},
       {"MPI_Bcast", 0.10, 200, true, true},
       {"MPI_Comm_split", 0.05, 8000, false, false},
       {"MPI_Type_vector", 0.05, 2, false, false}},
      // master-worker
      {{"MPI_Send", 0.15, 20, true, false},
       {"MPI_Recv", 0.60, 400, true, false},
       {"MPI_Probe", 0.15, 100, false, false},
       {"MPI_Get_count", 0.001, 0.2, false, false},
       {"MPI_Bcast", 0.09, 150, true, true}},
      // ssend/wait-heavy, badly balanced
      {{"MPI_Ssend", 0.35, 2000, true, false},
       {"MPI_Irecv", 0.02, 3, true, false},
       {"MPI_Wait", 0.45, 900, false, false},
       {"MPI_Reduce", 0.13, 500, true, true},
       {"MPI_Gather", 0.05, 300, true, true}},
  };
  return p;
}

const std::array<const char*, 24> first_names = {"anna", "bert", "carla", "dirk", "eva",  "fritz",
                                                 "gina", "hans", "ines",  "jan",  "kai",  "lena",
                                                 "mia",  "nils", "olga",  "paul", "rita", "sven",
                                                 "tina", "uwe",  "vera",  "wim",  "xena", "yann"};

} // namespace

record::job_record synth_record(const synth_options& o, std::int64_t index) {
  // One generator per record: record i does not depend on how many came before.
  std::mt19937_64 rng(o.seed * 0x9E3779B97F4A7C15ull +
                      static_cast<std::uint64_t>(index) * 0xBF58476D1CE4E5B9ull);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const int users = std::max(1, o.users);
  // Zipf-like: user k with weight 1/(k+1).
  double harmonic = 0;
  for (int k = 0; k < users; ++k)
    harmonic += 1.0 / (k + 1);
  double pick = uniform(rng) * harmonic;
  int user = 0;
  while (user + 1 < users && pick > 1.0 / (user + 1)) {
    pick -= 1.0 / (user + 1);
    ++user;
  }
  std::mt19937_64 user_rng(o.seed * 31 + static_cast<std::uint64_t>(user));
  const auto& app = profiles()[user_rng() % profiles().size()];
  const bool fortran_user = user_rng() % 100 < 55;
  const double user_mpi =
      0.04 + 0.5 * std::pow(std::uniform_real_distribution<double>(0, 1)(user_rng), 2.5);
  const double user_msg =
      std::exp(std::uniform_real_distribution<double>(std::log(64.0), std::log(1 << 20))(user_rng));
  const int user_size = 2 + static_cast<int>(user_rng() % 8); // preferred log2 of ranks

  const bool test_run = uniform(rng) < 0.5;
  std::int64_t ranks = 0;
  if (test_run) {
    ranks = std::int64_t{1} << (rng() % 4); // 1..8
  } else {
    int lg = std::clamp(user_size + static_cast<int>(rng() % 3) - 1, 1, 11);
    ranks = std::int64_t{1} << lg;
    if (uniform(rng) < 0.2) // not a power of two
      ranks += static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(ranks));
  }
  const double wall = test_run
                          ? 2 + 120 * uniform(rng)
                          : std::exp(std::normal_distribution<double>(std::log(3600), 1.0)(rng));
  const double mpi_share =
      std::clamp(user_mpi * std::exp(std::normal_distribution<double>(0, 0.3)(rng)), 0.005, 0.95);

  record::job_record r;
  record::job_facts& j = r.job;
  const std::int64_t to = o.to != 0 ? o.to : static_cast<std::int64_t>(std::time(nullptr));
  const std::int64_t from = o.from != 0 ? o.from : to - std::int64_t{28} * 86400;
  const std::int64_t end =
      from + static_cast<std::int64_t>(uniform(rng) *
                                       static_cast<double>(std::max<std::int64_t>(1, to - from)));
  const std::int64_t start = end - static_cast<std::int64_t>(std::ceil(wall));
  j.id = fmt::format("synth:{}:{}", o.seed, index);
  j.resource_manager = "slurm";
  j.ranks = static_cast<std::uint64_t>(ranks);
  j.ranks_reported = j.ranks;
  j.hosts = static_cast<std::uint64_t>((ranks + 31) / 32);
  for (std::uint64_t h = 0; h < std::min<std::uint64_t>(j.hosts, 4); ++h)
    j.host_names.push_back(fmt::format("node{:04}", (rng() % 2000)));
  j.user =
      fmt::format("{}{:02}", first_names[static_cast<size_t>(user) % first_names.size()], user);
  j.uid = static_cast<std::uint64_t>(o.first_uid + user);
  const bool fortran = test_run ? uniform(rng) < 0.33 : fortran_user;
  j.executable =
      fmt::format("/home/{}/bin/app{}{}", j.user, user_rng() % 7, fortran ? ".f90x" : "");
  // Three inputs per program, as users run the same few inputs again and again (and models
  // group runs by their arguments).
  j.argv = {j.executable, fmt::format("--steps={}", 1000 * (1 + rng() % 3))};
  j.mpi_flavor = rng() % 3 == 0 ? "mpich" : "openmpi";
  j.mpi_library = j.mpi_flavor == "mpich" ? "MPICH Version: 4.0.2" : "Open MPI v4.1.4";
  j.language = fortran ? "Fortran" : "C/C++";
  j.thread_level = "MPI_THREAD_SINGLE";
  j.start = format_utc_time(start);
  j.end = format_utc_time(end);
  j.status = uniform(rng) < 0.97 ? record::job_status::finalized : record::job_status::aborted;
  if (j.status == record::job_status::aborted)
    j.abort_code = 1;
  j.wall_time_s = std::round(wall * 1000) / 1000;
  const double cpu = j.wall_time_s * static_cast<double>(ranks);
  const double mpi_total = cpu * mpi_share;
  // The routine times sum to the job's MPI time, as in a real record.
  std::vector<std::pair<const routine_mix*, double>> parts;
  double weights = 0;
  for (const routine_mix& m : app) {
    const double w = m.weight * std::exp(std::normal_distribution<double>(0, 0.4)(rng));
    parts.emplace_back(&m, w);
    weights += w;
  }
  const double setup = 1e-3 * static_cast<double>(ranks); // Init, Finalize, Comm_rank/size
  double mpi_sum = 0;
  auto add_routine = [&](const char* name, std::uint64_t calls, double time, std::uint64_t sent,
                         std::uint64_t received) {
    record::routine x;
    x.name = name;
    x.calls = calls;
    x.time_s = time;
    const double per = calls > 0 ? time / static_cast<double>(calls) : 0;
    x.min_s = per * 0.2;
    x.max_s = per * 20;
    x.count_sum = (sent + received) / 8;
    x.bytes_sent = sent;
    x.bytes_received = received;
    const std::uint64_t per_rank = calls / static_cast<std::uint64_t>(ranks);
    x.per_rank.calls = {
        static_cast<double>(per_rank), static_cast<double>(calls) / static_cast<double>(ranks),
        static_cast<double>(per_rank + calls % static_cast<std::uint64_t>(ranks)), 0};
    const double mean = time / static_cast<double>(ranks);
    x.per_rank.time_s = {mean * 0.6, mean, mean * 1.8, rng() % static_cast<std::uint64_t>(ranks)};
    if (calls > 0 && (sent + received) > 0) {
      const std::uint64_t bytes_per_call = (sent + received) / calls;
      std::uint64_t bin = 0;
      if (bytes_per_call > 0) {
        bin = 1;
        while (bin * 2 <= bytes_per_call)
          bin *= 2;
      }
      x.size_histogram.push_back({bin, calls});
    }
    mpi_sum += time;
    r.routines.push_back(std::move(x));
  };
  const auto n = static_cast<std::uint64_t>(ranks);
  add_routine("MPI_Init", n, setup * 0.7, 0, 0);
  add_routine("MPI_Finalize", n, setup * 0.25, 0, 0);
  add_routine("MPI_Comm_rank", n, setup * 0.02, 0, 0);
  add_routine("MPI_Comm_size", n, setup * 0.03, 0, 0);
  for (const auto& [m, w] : parts) {
    const double time = std::max(0.0, mpi_total - setup) * w / weights;
    const double per_call =
        m->us_per_call * 1e-6 * std::exp(std::normal_distribution<double>(0, 0.3)(rng));
    const std::uint64_t calls =
        std::max<std::uint64_t>(n, static_cast<std::uint64_t>(time / per_call));
    std::uint64_t bytes = 0;
    if (m->moves_data)
      bytes = static_cast<std::uint64_t>(static_cast<double>(calls) * user_msg *
                                         (m->collective ? 2 : 1));
    const bool receives = std::string_view(m->name).find("ecv") != std::string_view::npos;
    add_routine(m->name, calls, time, receives ? 0 : (m->collective ? bytes / 2 : bytes),
                receives ? bytes : (m->collective ? bytes / 2 : 0));
  }
  std::sort(r.routines.begin(), r.routines.end(),
            [](const record::routine& a, const record::routine& b) { return a.name < b.name; });
  j.mpi_time_s = mpi_sum;
  j.mpi_percent = cpu > 0 ? 100 * mpi_sum / cpu : 0;
  j.mpi_percent_by_rank = {j.mpi_percent * 0.7, j.mpi_percent, std::min(100.0, j.mpi_percent * 1.4),
                           0, static_cast<std::uint64_t>(ranks - 1)};
  std::uint64_t calls = 0;
  for (const record::routine& x : r.routines)
    calls += x.calls;
  j.profiler_overhead_s = 2e-7 * static_cast<double>(calls); // about 0.2 us per call
  if (o.mpi_t)
    r.mpi_t = synth_mpi_t(rng(), static_cast<int>(ranks), user);
  return r;
}

synth_result write_synth(const synth_options& options, const std::string& dir, bool chown) {
  synth_result result;
  if (!common::make_writable_dir(dir)) {
    result.error = dir + ": cannot create or write the directory";
    return result;
  }
  for (std::int64_t i = 0; i < options.count; ++i) {
    const record::job_record r = synth_record(options, i);
    std::string text = record::to_json(r);
    if (options.compact)
      text = nlohmann::json::parse(text).dump() + "\n";
    std::string name = r.job.id;
    std::replace(name.begin(), name.end(), ':', '_');
    const std::string path = dir + "/" + name + ".json";
    if (std::string error = common::write_atomically(path, text); !error.empty()) {
      result.error = error;
      return result;
    }
    if (chown &&
        ::chown(path.c_str(), static_cast<uid_t>(r.job.uid), static_cast<gid_t>(-1)) != 0) {
      result.error = path + ": cannot give to uid " + std::to_string(r.job.uid);
      return result;
    }
    ++result.written;
  }
  return result;
}

synth_result store_synth(const synth_options& options, store& db) {
  synth_result result;
  constexpr std::int64_t batch = 5000;
  for (std::int64_t begin = 0; begin < options.count; begin += batch) {
    const std::int64_t end = std::min(options.count, begin + batch);
    std::vector<stored_job> jobs(static_cast<size_t>(end - begin));
    // Generating and deflating is the work; spread it over the cores like ingest does.
    const unsigned workers = std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 8);
    std::vector<std::thread> threads;
    for (unsigned w = 0; w < workers; ++w)
      threads.emplace_back([&, w] {
        for (std::int64_t i = begin + w; i < end; i += workers) {
          const record::job_record r = synth_record(options, i);
          stored_job& j = jobs[static_cast<size_t>(i - begin)];
          j = make_stored_job(r, record::to_json(r), static_cast<std::int64_t>(r.job.uid),
                              r.job.user);
          j.record_packed = pack_record(j.record_json);
          std::string().swap(j.record_json); // clear() would keep the buffer
        }
      });
    for (std::thread& t : threads)
      t.join();
    result.written += db.insert(jobs).inserted;
  }
  return result;
}

} // namespace strata::site
