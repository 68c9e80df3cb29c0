#include "launch/launcher_child.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace strata::launch {
namespace {

TEST(LauncherChild, OpenMpiNamesTheRankThatEndedTheJob) {
  ended_process p;
  EXPECT_FALSE(read_launcher_line("Primary job  terminated normally, but 1 process returned", p));
  ASSERT_TRUE(read_launcher_line("mpirun.openmpi noticed that process rank 2 with PID 0 on node vm "
                                 "exited on signal 9 (Killed).",
                                 p));
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.how, "exited on signal 9 (Killed)");
  EXPECT_EQ(tool_rank_that_ended_the_job(p, -1, 2), 2);
  const std::string said = tool_rank_ended_line(2, p.how, 2, "Open MPI");
  EXPECT_NE(said.find("(rank 2, exited on signal 9 (Killed)) was one of the tool ranks"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("not the application's (ranks 0-1)"), std::string::npos) << said;
  // One of the application's ranks: nothing to add to the launcher's words.
  EXPECT_EQ(tool_rank_that_ended_the_job(p, -1, 3), -1);
}

TEST(LauncherChild, MpichNamesAPidAndHowOnTheNextLine) {
  ended_process p;
  ASSERT_TRUE(read_launcher_line("=   PID 28218 RUNNING AT vm", p));
  ASSERT_TRUE(read_launcher_line("=   EXIT CODE: 9", p));
  EXPECT_EQ(p.pid, 28218);
  EXPECT_EQ(p.how, "EXIT CODE: 9");
  EXPECT_FALSE(read_launcher_line("=   CLEANING UP REMAINING PROCESSES", p));
  EXPECT_EQ(tool_rank_that_ended_the_job(p, 1, 1), 1);   // the tool rank ended first
  EXPECT_EQ(tool_rank_that_ended_the_job(p, -1, 2), -1); // which ended first is not known
  EXPECT_NE(tool_rank_ended_line(1, p.how, 1, "MPICH").find("(rank 1, EXIT CODE: 9)"),
            std::string::npos);
  EXPECT_NE(tool_rank_ended_line(1, "", 1, "MPICH").find("not the application's (rank 0)"),
            std::string::npos);
}

TEST(LauncherChild, UnderMpichTheProcessThatEndedFirstDecides) {
  // MPICH may name rank 0, which it killed while cleaning up after the tool rank: the tool rank
  // ended first. An application's rank that ended first blames no tool rank.
  ended_process p{-1, 100, "EXIT CODE: 9"};
  EXPECT_EQ(tool_rank_that_ended_the_job(p, 2, 2), 2);
  EXPECT_EQ(tool_rank_that_ended_the_job(p, 0, 2), -1);
}

TEST(LauncherChild, AProcessMayHaveClosedItsFilesOnceExitingWithoutItsMemory) {
  // Fields 3 to 23 of /proc/PID/stat: state, ppid ... flags (9) ... vsize (23).
  const auto stat = [](const char* state, unsigned long flags, unsigned long vsize) {
    return "41 (a (b) c) " + std::string(state) + " 1 41 41 0 -1 " + std::to_string(flags) +
           " 120 0 0 0 5 3 0 0 20 0 1 0 77 " + std::to_string(vsize) + " 300 18446744073709551615";
  };
  EXPECT_FALSE(files_may_be_closed_from_stat(stat("S", 0x400100, 2 << 20)));
  EXPECT_FALSE(files_may_be_closed_from_stat(stat("R", 0x400104, 2 << 20))); // exiting, has memory
  EXPECT_TRUE(files_may_be_closed_from_stat(stat("R", 0x400104, 0)));        // and without
  EXPECT_TRUE(files_may_be_closed_from_stat(stat("Z", 0x400104, 0)));
  EXPECT_TRUE(files_may_be_closed_from_stat("41 (a) S 1 41")); // cut short: not known
}

TEST(LauncherChild, ProcFilesOfEndedProcessesReadAsEmpty) {
  EXPECT_NE(read_proc_file("/proc/self/stat").find(std::to_string(::getpid())), std::string::npos);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0)
    ::_exit(0);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(read_proc_file("/proc/" + std::to_string(child) + "/environ"), "");
}

TEST(LauncherChild, ALiveChildHoldsItsFilesAndAKilledOneMayNot) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  EXPECT_FALSE(files_may_be_closed(child));
  ::kill(child, SIGKILL);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  EXPECT_TRUE(files_may_be_closed(child)); // a zombie until reaped
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(files_may_be_closed(child)); // gone
}

TEST(LauncherChild, RanksAreLookedForLessOftenWhileNoneAppearAndNotAfterAMinute) {
  EXPECT_EQ(next_rank_look_ms(20, true, true, 100), 20);
  EXPECT_EQ(next_rank_look_ms(20, false, true, 100), 40);
  EXPECT_EQ(next_rank_look_ms(20, false, false, 3000), 20);  // the launcher still starting
  EXPECT_EQ(next_rank_look_ms(20, false, false, 10000), 40); // no rank on this node
  EXPECT_EQ(next_rank_look_ms(640, false, true, 5000), 1000);
  EXPECT_EQ(next_rank_look_ms(1000, false, true, 5000), 1000);
  EXPECT_EQ(next_rank_look_ms(1000, true, true, 5000), 20); // a rank appeared: often again
  EXPECT_EQ(next_rank_look_ms(20, true, true, 60000), -1);
  EXPECT_EQ(next_rank_look_ms(20, false, false, 60000), -1);
}

TEST(LauncherChild, RanksComeFromTheMarkedProcessesEnvironments) {
  using namespace std::string_literals;
  const std::string marker = "STRATA_RUN_ID=7-1";
  EXPECT_EQ(rank_in_environment("A=1\0STRATA_RUN_ID=7-1\0PMI_RANK=3\0"s, marker), 3);
  EXPECT_EQ(rank_in_environment("OMPI_COMM_WORLD_RANK=5\0STRATA_RUN_ID=7-1"s, marker), 5);
  EXPECT_EQ(rank_in_environment("STRATA_RUN_ID=7-10\0PMI_RANK=3\0"s, marker), -1); // another run
  EXPECT_EQ(rank_in_environment("STRATA_RUN_ID=7-1\0"s, marker), -1); // the launcher itself
}

} // namespace
} // namespace strata::launch
