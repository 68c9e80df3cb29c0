#include "profiler/spool.hpp"

#include "profiler/rank_file.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace strata::profiler;
using namespace std::chrono_literals;

namespace {
std::string temp_path(const std::string& name) {
  return testing::TempDir() + "/" + name + "." + std::to_string(::getpid());
}
} // namespace

TEST(Spool, ARecordIsWrittenWithinTheDeadline) {
  const std::string path = temp_path("record.json");
  EXPECT_EQ(write_with_deadline(path, "{}", 10s), "");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "{}");
  std::remove(path.c_str());
}

// A file system that does not answer must not hang the job: the write gives up, with a line.
TEST(Spool, AFileSystemThatDoesNotAnswerCostsTheDeadlineOnly) {
  const std::string path = temp_path("stuck.json");
  // The temporary file the write opens is a FIFO no one reads: open() blocks.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  ASSERT_EQ(::mkfifo(tmp.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(write_with_deadline(path, "{}", 50ms),
            path + ": no answer from the file system after 50 ms");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  // Let the writer left behind finish, so that it does not outlive the test.
  const int reader = ::open(tmp.c_str(), O_RDONLY);
  char buf[8];
  while (reader >= 0 && ::read(reader, buf, sizeof buf) > 0) {
  }
  if (reader >= 0)
    ::close(reader);
  for (int i = 0; i < 200 && ::access(path.c_str(), F_OK) != 0; ++i)
    ::usleep(10'000);
  std::remove(path.c_str());
  std::remove(tmp.c_str());
}

TEST(Spool, TheConfiguredSpoolThenHomeThenTmp) {
  EXPECT_EQ(spool_candidates("/s", "/default", "/home/u", 7),
            (std::vector<std::string>{"/s", "/home/u/.strata/spool", "/tmp/strata-spool-7"}));
  EXPECT_EQ(spool_candidates("", "/default", nullptr, 7),
            (std::vector<std::string>{"/default", "/tmp/strata-spool-7"}));
}

TEST(Spool, AnUnwritableSpoolFallsBackToHome) {
  const std::string home = temp_path("home");
  const std::vector<std::string> fine = {home + "/spool", "/nonexistent"};
  placed_rank_file placed = place_rank_file(fine, 0, "job.rank0.prof", {"MPI_Init"}, 0, 0);
  ASSERT_TRUE(placed.mapping.ok()) << placed.mapping.error;
  EXPECT_EQ(placed.spool, 0u);
  EXPECT_EQ(placed.why_not_first, "");
  placed.mapping.unmap();
  std::remove((home + "/spool/job.rank0.prof").c_str());
  const std::vector<std::string> spools =
      spool_candidates("/proc/no-spool-here", "/x", home.c_str(), 0);
  placed = place_rank_file(spools, 0, "job.rank0.prof", {"MPI_Init"}, 0, 0);
  ASSERT_TRUE(placed.mapping.ok()) << placed.mapping.error;
  EXPECT_EQ(placed.spool, 1u);
  EXPECT_EQ(placed.mapping.path, home + "/.strata/spool/job.rank0.prof");
  EXPECT_EQ(placed.why_not_first.rfind("spool /proc/no-spool-here is not writable (", 0), 0u)
      << placed.why_not_first;
  placed.mapping.unmap();
  std::remove(placed.mapping.path.c_str());
}

TEST(Spool, ASpoolThatIsAFileFallsBackToHome) {
  const std::string home = temp_path("home-file");
  const std::string file = temp_path("spool-file");
  std::ofstream(file) << "x";
  ::chmod(file.c_str(), 0755); // writable and searchable, were it a directory
  EXPECT_EQ(spool_unusable(file), "spool " + file + " is not a directory");
  const std::vector<std::string> spools = spool_candidates(file.c_str(), "/x", home.c_str(), 0);
  placed_rank_file placed = place_rank_file(spools, 0, "job.rank0.prof", {"MPI_Init"}, 0, 0);
  ASSERT_TRUE(placed.mapping.ok()) << placed.mapping.error;
  EXPECT_EQ(placed.spool, 1u);
  EXPECT_EQ(placed.why_not_first, "spool " + file + " is not a directory");
  placed.mapping.unmap();
  std::remove(placed.mapping.path.c_str());
  std::remove(file.c_str());
}

TEST(Spool, TheOverheadRecordNamesItsProfileTwin) {
  EXPECT_EQ(profile_twin("local-h-1-42.overhead.json"), "local-h-1-42.json");
  EXPECT_EQ(profile_twin("local-h-1-42.json"), "");
  EXPECT_EQ(profile_twin(".overhead.json"), "");
  EXPECT_EQ(profile_twin("local-h-1-42.overhead.rank0.prof"), "");
}

// A job run with the profile and the overhead module that never finalized: each module's rank
// files become a record of their own, named after the module, with its counts only.
TEST(Spool, RecoverKeepsEachModulesRecordApart) {
  const std::string spool = temp_path("both-spool");
  ASSERT_EQ(::mkdir(spool.c_str(), 0700), 0);
  const auto leave = [&](const std::string& key, const char* module, uint64_t sends) {
    rank_mapping m = create_rank_file(spool + "/" + key + ".rank0.prof", {"MPI_Init", "MPI_Send"});
    ASSERT_TRUE(m.ok()) << m.error;
    copy_field(m.header->module, sizeof(m.header->module), module);
    copy_field(m.header->strata_version, sizeof(m.header->strata_version), "9.8.7");
    copy_field(m.header->job_id, sizeof(m.header->job_id), "local:h:1:42");
    m.header->world_size = 1;
    m.header->pid = 0; // gone
    m.slots[1].calls = sends;
    m.unmap();
  };
  leave("job-42", "profile", 3);
  leave("job-42.overhead", "overhead", 3);
  const std::vector<recovery> out = recover_spool(spool);
  ASSERT_EQ(out.size(), 2u);
  for (const recovery& r : out) {
    ASSERT_FALSE(r.record_path.empty()) << r.job_key;
    std::ifstream in(r.record_path);
    std::stringstream text;
    text << in.rdbuf();
    const bool overhead = r.job_key == "job-42.overhead";
    EXPECT_EQ(r.record_path, spool + "/" + r.job_key + ".json");
    EXPECT_NE(text.str().find(overhead ? R"("module": "overhead")" : R"("module": "profile")"),
              std::string::npos);
    EXPECT_NE(text.str().find(R"("strata_version": "9.8.7")"), std::string::npos);
    EXPECT_NE(text.str().find(R"("calls": 3)"), std::string::npos) << text.str();
    std::remove(r.record_path.c_str());
  }
  ::rmdir(spool.c_str());
}
