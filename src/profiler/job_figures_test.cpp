#include "profiler/job_figures.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

using namespace strata::profiler;

namespace {

rank_data make_rank(int rank, int world, job_status status, uint64_t send_calls, uint64_t send_ns) {
  rank_data r;
  r.header.rank = rank;
  r.header.world_size = world;
  r.header.status = static_cast<int32_t>(status);
  r.header.init_mono_ns = 1000;
  r.header.final_mono_ns = 1000 + 2'000'000'000ull; // 2 s
  copy_field(r.header.host, sizeof(r.header.host), rank < 2 ? "n1" : "n2");
  copy_field(r.header.job_id, sizeof(r.header.job_id), "slurm:42");
  r.names = {"MPI_Init", "MPI_Send", "MPI_Bcast"};
  r.slots.assign(3, routine_slot{});
  for (auto& s : r.slots)
    s.min_ns = UINT64_MAX;
  r.slots[0] = {1, 500'000'000, 500'000'000, 500'000'000, 0, 0, 0, {}, {}};
  r.slots[1].calls = send_calls;
  r.slots[1].time_ns = send_ns;
  r.slots[1].min_ns = 10;
  r.slots[1].max_ns = 1000 + static_cast<uint64_t>(rank);
  r.slots[1].bytes_sent = send_calls * 100;
  r.slots[1].size_hist[size_bin(100)] = send_calls;
  return r;
}
// The job of the byte-exact test: two ranks, one abort, call sites, counters.
// The job of the byte-exact test: two ranks, one abort, call sites, counters.
job_figures fixed_job() {
  job_figures job;
  for (int rank = 0; rank < 2; ++rank) {
    rank_data r;
    r.header.rank = rank;
    r.header.world_size = 2;
    r.header.status = static_cast<int32_t>(rank == 1 ? job_status::aborted : job_status::finalized);
    r.header.status_detail = rank == 1 ? 3 : 0;
    r.header.init_mono_ns = 1000;
    r.header.final_mono_ns = 1000 + 1'500'000'000ull;
    r.header.overhead_ns = 2000;
    r.header.start_unix_ns = 1'700'000'000'000'000'000;
    r.header.end_unix_ns = 1'700'000'002'000'000'000;
    r.header.thread_level = 0;
    r.header.uid = 1000;
    r.header.counter_count = 1;
    copy_field(r.header.counter_names[0], sizeof(r.header.counter_names[0]), "task-clock");
    r.header.counters_in_mpi[0] = 5;
    r.header.counters_outside_mpi[0] = 7;
    copy_field(r.header.host, sizeof(r.header.host), "n1");
    copy_field(r.header.user, sizeof(r.header.user), "alice");
    copy_field(r.header.job_id, sizeof(r.header.job_id), "slurm:42");
    copy_field(r.header.mpi_flavor, sizeof(r.header.mpi_flavor), "openmpi");
    copy_field(r.header.mpi_library, sizeof(r.header.mpi_library), "Open MPI v4.1.4");
    copy_field(r.header.executable, sizeof(r.header.executable), "/bin/app");
    const std::string argv("./app\0-n\0"
                           "3\0",
                           11);
    std::copy(argv.begin(), argv.end(), r.header.argv);
    const std::string env("OMPI_MCA_btl=self\0STRATA_TOOLS=profile\0", 38);
    std::copy(env.begin(), env.end(), r.header.environment);
    r.names = {"MPI_Init", "MPI_Send", "MPI_Comm_rank"};
    r.slots.assign(3, routine_slot{});
    for (routine_slot& s : r.slots)
      s.min_ns = UINT64_MAX;
    r.slots[0] = {1, 500'000'000, 500'000'000, 500'000'000, 0, 0, 0, {}, {}};
    r.slots[1].calls = 10 + static_cast<uint64_t>(rank);
    r.slots[1].time_ns = 3'000'000;
    r.slots[1].min_ns = 100;
    r.slots[1].max_ns = 900'000;
    r.slots[1].count_sum = 40;
    r.slots[1].bytes_sent = 4000;
    r.slots[1].size_hist[size_bin(400)] = 10;
    r.slots[2].calls = 3; // counted, never timed
    add_rank(job, r);
  }
  job.callsites = {{"MPI_Send", "app.c", 12, "main", 21, 6'000'000, 8000, 1'000'000, 2}};
  job.callsites_dropped = 1;
  job.model_clamped_calls = 4;
  job.finalize_s = 0.0125;
  job.poll_bytes_estimated = 0;
  return job;
}

std::string read_testdata(const std::string& name) {
  std::ifstream in(std::string(STRATA_PROFILER_TESTDATA) + "/" + name, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace

TEST(JobFigures, SumsSpreadAndStatusAcrossRanks) {
  job_figures job;
  job.partial = true;
  add_rank(job, make_rank(1, 4, job_status::finalized, 10, 300'000'000));
  add_rank(job, make_rank(0, 4, job_status::aborted, 30, 100'000'000));
  add_rank(job, make_rank(2, 4, job_status::signal, 20, 200'000'000));
  EXPECT_EQ(job.ranks, 4);
  EXPECT_EQ(job.ranks_reported, 3);
  EXPECT_EQ(job.status, job_status::aborted); // the most telling end
  EXPECT_EQ(job.facts.rank, 0);
  const routine_total& send = job.routines.at("MPI_Send");
  EXPECT_EQ(send.calls, 60u);
  EXPECT_EQ(send.bytes_sent, 6000u);
  EXPECT_EQ(send.max_ns, 1002u);
  EXPECT_EQ(send.time_per_rank.max_rank, 1);
  EXPECT_EQ(send.calls_per_rank.max_rank, 0);
  EXPECT_DOUBLE_EQ(job.mpi_s, 0.6); // MPI_Init is not MPI time
  EXPECT_DOUBLE_EQ(job.wall_s, 2.0);
  EXPECT_EQ(job.host_names, (std::vector<std::string>{"n1", "n2"}));

  // The record is strata.job/1 as the record library reads it.
  const auto parsed = strata::record::parse_record(strata::record::to_json(to_record(job)));
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  EXPECT_EQ(parsed.record->job.ranks, 4);
  EXPECT_TRUE(parsed.record->job.partial);
  EXPECT_EQ(strata::record::status_name(parsed.record->job.status), "aborted");
}

// The record's bytes are those the profiler has always written (testdata/fixed_job.json was
// written by the profiler's earlier writer): sites and tools may compare or hash them.
TEST(JobFigures, RanksKilledWithoutAWordEndAtTheirLatestCall) {
  // Both ranks killed (MPICH's launcher ends the others with SIGKILL): their files still say
  // running. The job is "killed", and it ended at the latest call's exit on the wall clock:
  // MPI_Init's entry + MPI_Init's 0.5 s + the time from its return to the latest call.
  job_figures job;
  job.partial = true;
  for (int rank = 0; rank < 2; ++rank) {
    rank_data r = make_rank(rank, 2, job_status::running, 10, 100);
    r.header.start_unix_ns = 1'700'000'000'000'000'000;
    r.header.init_mono_ns = 5'000;
    r.header.last_mono_ns = 5'000 + 1'000'000'000ull * static_cast<uint64_t>(rank + 1);
    r.header.final_mono_ns = 0; // never entered MPI_Finalize
    add_rank(job, r);
  }
  EXPECT_EQ(job.status, job_status::running);
  EXPECT_EQ(job.end_unix_ns, 1'700'000'002'500'000'000);
  const strata::record::job_record record = to_record(job);
  EXPECT_EQ(strata::record::status_name(record.job.status), "killed");
  EXPECT_EQ(record.job.end, "2023-11-14T22:13:22Z");
  // An exit without MPI_Finalize on another rank says more than a kill.
  add_rank(job, make_rank(2, 3, job_status::exited, 10, 100));
  EXPECT_EQ(strata::record::status_name(to_record(job).job.status), "exit");
}

TEST(JobFigures, TheRecordIsWrittenByteForByteAsBefore) {
  const std::string expected = read_testdata("fixed_job.json");
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(strata::record::to_json(to_record(fixed_job())), expected);
}
