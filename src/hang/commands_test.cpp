// `strata hang` on files the writer made, as the profile will leave them in a spool.
#include "hang/commands.hpp"
#include "hang/diagnose.hpp"
#include "hang/running_job.hpp"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace strata::hang {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t second = 1'000'000'000;

class HangCommand : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/hang_command_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Rank `rank` of `size` of job "job1" in `routine` from `peer`, entered a minute ago.
  void write_rank(int32_t rank, int32_t size, const std::string& routine, int32_t peer,
                  uint32_t line, const std::string& key = "job1", uint64_t heartbeat_age = 0) {
    std::string error;
    std::optional<state_writer> w = state_writer::open(
        dir_ + "/" + key + ".rank" + std::to_string(rank) + ".hang", rank, size, 2, error);
    ASSERT_TRUE(w) << error;
    thread_state t;
    t.phase = thread_phase::in_mpi;
    t.lang = language::c;
    t.routine = routine;
    t.file = "ring.c";
    t.line = line;
    t.function = "main";
    t.comm = {7, static_cast<uint32_t>(size), 0, 1};
    t.peer = peer;
    t.tag = 3;
    t.since_ns = realtime_ns() - 60 * second - heartbeat_age;
    w->write(0, t);
    w->observe(realtime_ns() - heartbeat_age);
  }

  std::pair<int, std::string> run(const hang_options& o) {
    ::testing::internal::CaptureStdout();
    const int status = hang_command(o);
    return {status, ::testing::internal::GetCapturedStdout()};
  }

  std::string dir_;
};

TEST_F(HangCommand, DiagnosesADeadlockFromASpoolDirectory) {
  write_rank(0, 2, "MPI_Recv", 1, 12);
  write_rank(1, 2, "MPI_Recv", 0, 12);
  const auto [status, text] = run({{dir_}, "text", "", 10, ""});
  EXPECT_EQ(status, 0);
  EXPECT_NE(text.find("HANG"), std::string::npos) << text;
  EXPECT_NE(text.find("DEADLOCK: ranks 0-1 wait for each other"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 1 in MPI_Recv at ring.c:12 (main)"), std::string::npos) << text;
  const auto [json_status, json_text] = run({{dir_}, "json", "", 10, ""});
  EXPECT_EQ(json_status, 0);
  const auto j = nlohmann::json::parse(json_text);
  EXPECT_EQ(j["verdict"], "hang");
  EXPECT_EQ(j["deadlocks"][0]["cycle"][0]["line"], 12);
}

TEST_F(HangCommand, AThresholdLongerThanTheWaitIsNoHang) {
  write_rank(0, 2, "MPI_Recv", 1, 12);
  write_rank(1, 2, "MPI_Recv", 0, 12);
  const auto [status, text] = run({{dir_}, "text", "", 3600, ""});
  EXPECT_EQ(status, 0);
  EXPECT_TRUE(text.starts_with("No hang: the job made progress")) << text;
}

TEST_F(HangCommand, ATruncatedStateFileIsOneClearError) {
  write_rank(0, 2, "MPI_Recv", 1, 12);
  write_rank(1, 2, "MPI_Recv", 0, 12);
  fs::resize_file(dir_ + "/job1.rank1.hang", 300);
  const hang_options o{{dir_}, "text", "", 10, ""};
  const loaded_states loaded = load_states(o);
  EXPECT_EQ(loaded.error, dir_ + "/job1.rank1.hang: truncated: 300 bytes, its header says 1488");
  ::testing::internal::CaptureStderr();
  const auto [status, text] = run(o);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(status, 2);
  EXPECT_TRUE(text.empty());
  EXPECT_EQ(err, "strata: error: " + loaded.error + "\n");
}

TEST_F(HangCommand, SeveralJobsInADirectoryNeedJob) {
  write_rank(0, 1, "MPI_Barrier", no_peer, 5);
  std::ofstream(dir_ + "/job2.rank0.hang") << "x";
  EXPECT_EQ(load_states({{dir_}, "text", "", 10, ""}).error,
            dir_ + " holds the states of several jobs (job1, job2): choose one with --job");
  const loaded_states one = load_states({{dir_}, "text", "job1", 10, ""});
  EXPECT_TRUE(one.error.empty()) << one.error;
  EXPECT_EQ(one.states.size(), 1u);
  EXPECT_NE(load_states({{dir_ + "/job2.rank0.hang"}, "text", "", 10, ""})
                .error.find("not a Strata hang state file"),
            std::string::npos);
}

TEST_F(HangCommand, AnEmptyDirectoryIsNamed) {
  EXPECT_EQ(load_states({{dir_}, "text", "", 10, ""}).error,
            dir_ + ": no hang state files (JOB.rankR.hang)");
}

TEST_F(HangCommand, NowFindsTheRunningJobAndSaysWhenItIsNotRunningOrUnknown) {
  write_rank(0, 2, "MPI_Recv", 1, 12, "4711-99");
  write_rank(1, 2, "MPI_Recv", 0, 12, "4711-99");
  write_rank(0, 1, "MPI_Barrier", no_peer, 5, "4712-98", 600 * second);
  hang_options o{{dir_}, "text", "", 10, "4711"};
  const auto [status, text] = run(o);
  EXPECT_EQ(status, 0);
  EXPECT_NE(text.find("DEADLOCK: ranks 0-1 wait for each other"), std::string::npos) << text;
  o.now_job = "4712";
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run(o).first, 1);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find(
                "strata: job 4712-98 is not running: its ranks last wrote their states 600."),
            std::string::npos);
  o.now_job = "4713";
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run(o).first, 2);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "strata: error: job 4713 is unknown: no hang states of it in " + dir_ +
                " (a job under the profile keeps them while it runs)\n");
}

TEST(KeyIsOfJob, TheKeyOrTheJobIdBeforeThePid) {
  EXPECT_TRUE(key_is_of_job("4711-99", "4711"));
  EXPECT_TRUE(key_is_of_job("4711-99", "4711-99"));
  EXPECT_FALSE(key_is_of_job("47111-99", "4711"));
  EXPECT_FALSE(key_is_of_job("4711-5-99", "4711"));
  EXPECT_FALSE(key_is_of_job("4711-99", ""));
}

TEST(JudgingTime, LiveStatesAreJudgedNowEndedOnesAtTheirLastHeartbeat) {
  rank_state r;
  r.observed_ns = 1000 * second;
  EXPECT_EQ(judging_time({r}, 10 * second, 1005 * second), 1005 * second);
  EXPECT_EQ(judging_time({r}, 10 * second, 5000 * second), 1000 * second);
}

TEST(HangAfterOption, TheBoundIsTheCommandsOwn) {
  // `strata hang` takes 0 (judge at once), `strata run` only a duration above 0.
  for (const bool zero_allowed : {true, false}) {
    CLI::App app;
    double seconds = -1;
    add_hang_after_option(app, seconds, zero_allowed, "help");
    app.parse("--hang-after 5m", false);
    EXPECT_EQ(seconds, 300);
    seconds = -1;
    if (zero_allowed) {
      app.parse("--hang-after 0", false);
      EXPECT_EQ(seconds, 0);
    } else {
      EXPECT_THROW(app.parse("--hang-after 0", false), CLI::ValidationError);
    }
    EXPECT_THROW(app.parse("--hang-after soon", false), CLI::ValidationError);
  }
}

// The one sequence the watches and --now share: the tree asked, its answer taken at a later look
// (here given by hand, as the root would), the diagnosis noting the tree; a job without a tree,
// or not yet with its files, from the files.
TEST_F(HangCommand, ALookAtARunningJobAsksItsTreeElseReadsTheFiles) {
  const std::string key = "job1-4242";
  for (int32_t rank = 0; rank < 2; ++rank)
    write_rank(rank, 2, "MPI_Recv", rank ^ 1, 20, key);
  running_job job;
  job.spool = dir_;
  job.key = key;
  job.files.inputs = {dir_};
  job.files.job = key;
  {
    tree_watch without;
    const job_look look = look_at_job(without, job, realtime_ns(), second);
    ASSERT_EQ(look.result, job_look::step::judged) << "no door: the files";
    EXPECT_FALSE(look.through_tree);
    EXPECT_EQ(look.d.result, verdict::hang);
    EXPECT_EQ(look.d.tree_tool_ranks, 0u);
  }
  ASSERT_TRUE(write_tree_door(dir_, 4242, 1, ""));
  tree_watch watch;
  EXPECT_EQ(look_at_job(watch, job, realtime_ns(), second).result, job_look::step::wait);
  const std::optional<tree_ask> ask = next_tree_ask(dir_, 4242);
  ASSERT_TRUE(ask);
  state_batch batch = read_rank_states(ask->spool, ask->key, {0, 1});
  batch.tool_ranks = 1;
  ASSERT_TRUE(answer_tree_ask(*ask, encode_batch(batch)));
  const job_look look = look_at_job(watch, job, realtime_ns(), second);
  ASSERT_EQ(look.result, job_look::step::judged);
  EXPECT_TRUE(look.through_tree);
  EXPECT_EQ(look.d.result, verdict::hang);
  EXPECT_EQ(look.d.tree_tool_ranks, 1u);
  EXPECT_NE(format_text(look.d).find("Merged through 1 tool rank"), std::string::npos)
      << format_text(look.d);
  job.spool.clear();
  job.files.job = "job2";
  EXPECT_EQ(look_at_job(watch, job, realtime_ns(), second).result, job_look::step::unreadable);
}

} // namespace
} // namespace strata::hang
