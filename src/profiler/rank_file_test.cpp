#include "profiler/rank_file.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace strata::profiler;

namespace {
std::string temp_path(const std::string& name) {
  return testing::TempDir() + "/" + name + "." + std::to_string(::getpid());
}

} // namespace

TEST(Bins, SizesAndCommunicators) {
  EXPECT_EQ(size_bin(0), 0);
  EXPECT_EQ(size_bin(1), 1);
  EXPECT_EQ(size_bin(2), 2);
  EXPECT_EQ(size_bin(3), 2);
  EXPECT_EQ(size_bin(4), 3);
  EXPECT_EQ(size_bin_lower_bound(size_bin(1000)), 512u);
  EXPECT_EQ(size_bin(~uint64_t{0}), size_bins - 1);
  EXPECT_EQ(comm_bin(1), 0);
  EXPECT_EQ(comm_bin(2), 1);
  EXPECT_EQ(comm_bin(7), 2);
}

TEST(RankFile, WrittenThroughTheMappingAndReadBack) {
  const std::string path = temp_path("rank.prof");
  rank_mapping m = create_rank_file(path, {"MPI_Init", "MPI_Send"});
  ASSERT_TRUE(m.ok()) << m.error;
  m.header->rank = 3;
  m.slots[1].calls = 7;
  m.slots[1].bytes_sent = 700;
  m.unmap(); // what a killed process leaves: the pages belong to the file
  const read_result r = read_rank_file(path);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.data.header.rank, 3);
  EXPECT_EQ(r.data.names, (std::vector<std::string>{"MPI_Init", "MPI_Send"}));
  EXPECT_EQ(r.data.slots[1].calls, 7u);
  EXPECT_EQ(r.data.slots[0].min_ns, UINT64_MAX);
  std::remove(path.c_str());
}

// On a full file system the file is refused with a message, and nothing is left: no sparse file
// whose first store through the mapping is a SIGBUS. In a child with a mount namespace of its
// own, where a small tmpfs is filled up.
TEST(RankFile, AFullFileSystemIsAnErrorNotASignal) {
  const std::string dir = temp_path("full");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_ends[0]);
    const auto say = [&](const std::string& text, int code) {
      [[maybe_unused]] ssize_t n = ::write(pipe_ends[1], text.data(), text.size());
      ::_exit(code);
    };
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=64k") != 0)
      say(std::string("cannot mount a tmpfs here: ") + std::strerror(errno), 2);
    const int fill = ::open((dir + "/fill").c_str(), O_WRONLY | O_CREAT, 0600);
    static const char block[4096] = {1};
    while (::write(fill, block, sizeof(block)) > 0) {
    }
    const std::string path = dir + "/rank0.prof";
    rank_mapping m = create_rank_file(path, {"MPI_Init", "MPI_Send"}, 4096, 8);
    if (m.ok())
      say("created on a full file system", 1);
    if (::access(path.c_str(), F_OK) == 0)
      say("left behind: " + path, 1);
    say(m.error, 0);
  }
  ::close(pipe_ends[1]);
  std::string said;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_ends[0], buf, sizeof(buf))) > 0;)
    said.append(buf, static_cast<size_t>(n));
  ::close(pipe_ends[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ::rmdir(dir.c_str());
  ASSERT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status);
  if (WEXITSTATUS(status) == 2)
    GTEST_SKIP() << said;
  ASSERT_EQ(WEXITSTATUS(status), 0) << said;
  EXPECT_EQ(said.rfind(dir + "/rank0.prof (", 0), 0u) << said;
  EXPECT_NE(said.find(" bytes): No space left on device"), std::string::npos) << said;
}

TEST(RankFile, UnchargedPollsAreAddedAtTheMeanOfTheCallsInTheSlot) {
  // A rank killed between two readings of its figures: 6 polls of MPI_Test were counted by the
  // core (untimed, completing nothing) but not yet moved into the slot.
  const std::string path = temp_path("polls.prof");
  rank_mapping m = create_rank_file(path, {"MPI_Init", "MPI_Test"}, 4);
  ASSERT_TRUE(m.ok()) << m.error;
  m.slots[1].calls = 2;
  m.slots[1].time_ns = 300;
  m.slots[1].min_ns = 100;
  m.uncharged_polls[1] = 6;
  m.callsites[3].key = 1; // the array lies after the call-site slots, not over them
  m.unmap();
  const read_result r = read_rank_file(path);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.data.slots[1].calls, 8u);
  EXPECT_EQ(r.data.slots[1].time_ns, 300u + 6 * 150);
  EXPECT_EQ(r.data.uncharged_polls, (std::vector<uint64_t>{0, 6}));
  EXPECT_EQ(r.data.callsites[3].key, 1u);
  EXPECT_EQ(r.data.slots[0].calls, 0u);
  std::remove(path.c_str());
}

TEST(RankFile, BadFilesGiveOneClearMessage) {
  const std::string path = temp_path("bad.prof");
  std::ofstream(path) << "hello";
  EXPECT_NE(read_rank_file(path).error.find("truncated"), std::string::npos);
  rank_mapping m = create_rank_file(path, {"MPI_Init", "MPI_Send"});
  ASSERT_TRUE(m.ok());
  const size_t full = m.bytes;
  m.header->magic[0] = 'X';
  m.unmap();
  EXPECT_NE(read_rank_file(path).error.find("bad magic"), std::string::npos);
  m = create_rank_file(path, {"MPI_Init", "MPI_Send"});
  m.unmap();
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(full - 8)), 0);
  EXPECT_NE(read_rank_file(path).error.find("truncated or corrupt"), std::string::npos);
  EXPECT_NE(read_rank_file(path + ".missing").error.find("No such file"), std::string::npos);
  std::remove(path.c_str());
}

TEST(RankFile, TheThreadsOwnArraysAreAddedByTheReader) {
  const std::string path = temp_path("threads.prof");
  rank_mapping m = create_rank_file(path, {"MPI_Init", "MPI_Send"}, 4, 2);
  ASSERT_TRUE(m.ok()) << m.error;
  ASSERT_EQ(m.thread_arrays, 2u);
  m.slots[1] = routine_slot{};
  m.slots[1].calls = 2;
  m.slots[1].time_ns = 30;
  m.slots[1].min_ns = 10;
  m.slots[1].max_ns = 20;
  routine_slot* second_thread = m.thread_slots + 2; // array 1, function 1
  second_thread[1].calls = 3;
  second_thread[1].time_ns = 60;
  second_thread[1].min_ns = 5;
  second_thread[1].max_ns = 40;
  second_thread[1].size_hist[2] = 3;
  m.uncharged_polls[1] = 0;
  m.unmap();
  const read_result r = read_rank_file(path);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.data.thread_arrays, 2u);
  EXPECT_EQ(r.data.slots[1].calls, 5u);
  EXPECT_EQ(r.data.slots[1].time_ns, 90u);
  EXPECT_EQ(r.data.slots[1].min_ns, 5u);
  EXPECT_EQ(r.data.slots[1].max_ns, 40u);
  EXPECT_EQ(r.data.slots[1].size_hist[2], 3u);
  EXPECT_EQ(r.data.slots[0].calls, 0u); // the first array (no calls) adds nothing
  EXPECT_EQ(r.data.slots[0].min_ns, UINT64_MAX);
  std::remove(path.c_str());
}

TEST(RankFile, VersionSixWithoutThreadArraysIsStillRead) {
  const std::string path = temp_path("v6.prof");
  rank_mapping m = create_rank_file(path, {"MPI_Init", "MPI_Send"});
  ASSERT_TRUE(m.ok()) << m.error;
  m.header->version = 6;
  m.slots[1].calls = 4;
  const size_t v7_bytes = m.bytes;
  m.unmap();
  // Version 6 ends at the uncharged polls: no thread array count.
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(v7_bytes - sizeof(uint64_t))), 0);
  const read_result r = read_rank_file(path);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.data.slots[1].calls, 4u);
  EXPECT_EQ(r.data.thread_arrays, 0u);
  std::remove(path.c_str());
}

TEST(RankFile, AnImpossibleNumberOfThreadArraysIsSaid) {
  const std::string path = temp_path("arrays.prof");
  rank_mapping m = create_rank_file(path, {"MPI_Init", "MPI_Send"});
  ASSERT_TRUE(m.ok()) << m.error;
  m.uncharged_polls[2] = 1000; // the array count, right after the uncharged polls
  m.unmap();
  EXPECT_NE(read_rank_file(path).error.find("1000 thread arrays"), std::string::npos);
  m = create_rank_file(path, {"MPI_Init", "MPI_Send"});
  m.uncharged_polls[2] = 3; // three arrays the file has no room for
  m.unmap();
  EXPECT_NE(read_rank_file(path).error.find("truncated or corrupt"), std::string::npos);
  std::remove(path.c_str());
}

TEST(RankFile, CountsMadeBeforeTheFileMoveIn) {
  const std::string path = temp_path("early.prof");
  rank_mapping m = create_rank_file(path, {"MPI_Init", "MPI_Test"}, 4);
  ASSERT_TRUE(m.ok()) << m.error;
  rank_header facts{};
  facts.rank = 5;
  facts.version = 99; // the file's own layout fields win over the facts'
  copy_field(facts.host, sizeof(facts.host), "n7");
  std::vector<routine_slot> early(2, routine_slot{});
  early[0].calls = 1;
  early[0].time_ns = 40;
  move_into_rank_file(m, facts, early, {0, 3});
  EXPECT_EQ(m.header->rank, 5);
  EXPECT_STREQ(m.header->host, "n7");
  EXPECT_EQ(m.header->version, rank_file_version);
  EXPECT_EQ(m.header->callsite_capacity, 4u);
  m.unmap();
  const read_result r = read_rank_file(path);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.data.slots[0].calls, 1u);
  EXPECT_EQ(r.data.slots[0].time_ns, 40u);
  EXPECT_EQ(r.data.uncharged_polls, (std::vector<uint64_t>{0, 3}));
  std::remove(path.c_str());
}
