// The batches a tree of tool ranks merges its ranks' states in, and the files through which a
// requester asks the tree: recorded states, no MPI.
#include "hang/batch.hpp"
#include "hang/diagnose.hpp"
#include "hang/recorded_states.hpp"
#include "hang/tree_ask.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string_view>

namespace strata::hang {
namespace {

using namespace recorded;

// The bytes of AKnownBatchEncodesToTheSameBytes's batch, hexadecimal, as the first encoder
// of strata.hang-batch/1 wrote them.
constexpr std::string_view known_batch_hex =
    "5348423102ac02d7230a066e6f64652d300b4d50495f57616974616c6c056170702e63046d61696e2b4d5049"
    "2e63707974686f6e2d3331312d7838365f36342d6c696e75782d676e752e736f2b30786532373535075f5f70"
    "79785f66084d50495f53656e6400066e6f64652d32296a6f622e72616e6b312e68616e673a204e6f20737563"
    "682066696c65206f72206469726563746f727980a094a58d1d020006c03e00000002020400b9600102280304"
    "00050103000201030001808040ffdfba84bf03808080808020090202020100020e080103000203010d010000"
    "4d04000403000100060700070700078080808080808080100309000101000000ffc7afa02500000000040601"
    "08fff782ad160002020400bb6001022a030400050103000201030001808040ffdfba84bf0380808080802009"
    "0202020100000effffffffffffffffff010103000203010d0100004d04000403000100060700070700078080"
    "808080808080100309000101000000ffc7afa02500000000010209";

// A rank with everything a state can hold: several threads, pending operations, a Python site.
rank_state full_rank(int32_t rank, int32_t size) {
  rank_state r = rank_in(rank, size, "MPI_Waitall", no_peer, 0, 40 + static_cast<uint32_t>(rank));
  r.pid = 4000 + rank;
  r.host = "node-" + std::to_string(rank % 3);
  r.observed_ns = now + static_cast<uint64_t>(rank) * 1000;
  r.threads_not_described = static_cast<uint32_t>(rank % 2);
  thread_state& t = r.threads[0];
  t.lang = language::python;
  t.os_thread = 12345 + static_cast<uint64_t>(rank);
  t.native_file = "MPI.cpython-311-x86_64-linux-gnu.so+0xe2755";
  t.native_line = 0;
  t.native_function = "__pyx_f";
  t.peer2 = any_source;
  t.tag2 = any_tag;
  t.calls_completed = 1ULL << 40;
  t.pending_total = 9;
  t.waited_total = 2;
  t.pending.push_back({op_kind::recv, true, (rank + 1) % size, 7, 8, world(size), 0});
  t.pending.push_back({op_kind::collective, true, no_peer, 0, 0, {77, 4, 0, 2}, 13});
  thread_state other;
  other.phase = thread_phase::outside_mpi;
  other.routine = "MPI_Send";
  other.since_ns = now - 5 * second;
  other.comm = {1ULL << 60, 3, -5, 0};
  other.torn = true;
  r.threads.push_back(other);
  return r;
}

TEST(Batch, KeepsEveryFieldOfEveryState) {
  state_batch b;
  for (int32_t rank = 0; rank < 5; ++rank)
    b.states.push_back(full_rank(rank, 5));
  b.unread.push_back({7, "job.rank7.hang: No such file or directory"});
  b.tool_ranks = 3;
  b.root_bytes = 1234;
  b.merge_ns = 987654;
  const batch_read_result read = decode_batch(encode_batch(b));
  ASSERT_TRUE(read.ok()) << read.error;
  ASSERT_EQ(read.batch.states.size(), b.states.size());
  for (size_t i = 0; i < b.states.size(); ++i) {
    const rank_state& want = b.states[i];
    const rank_state& got = read.batch.states[i];
    EXPECT_EQ(got.world_rank, want.world_rank);
    EXPECT_EQ(got.world_size, want.world_size);
    EXPECT_EQ(got.pid, want.pid);
    EXPECT_EQ(got.host, want.host);
    EXPECT_EQ(got.observed_ns, want.observed_ns);
    EXPECT_EQ(got.threads_not_described, want.threads_not_described);
    EXPECT_EQ(got.threads, want.threads);
  }
  EXPECT_EQ(read.batch.unread, b.unread);
  EXPECT_EQ(read.batch.tool_ranks, 3u);
  EXPECT_EQ(read.batch.root_bytes, 1234u);
  EXPECT_EQ(read.batch.merge_ns, 987654u);
}

// strata.hang-batch/1 is read by tool ranks of other builds of a job's tree: a known batch
// encodes to the very bytes it did when the format was made (captured from that encoder).
TEST(Batch, AKnownBatchEncodesToTheSameBytes) {
  state_batch b;
  b.states = {full_rank(0, 3), full_rank(2, 3)};
  b.states[1].observed_ns = now - 3 * second; // before the base: a negative difference
  b.states[1].pid = -1;
  b.states[1].threads[0].pending[0].bytes = ~uint64_t{0};
  b.unread.push_back({1, "job.rank1.hang: No such file or directory"});
  b.tool_ranks = 2;
  b.root_bytes = 300;
  b.merge_ns = 4567;
  std::string hex;
  for (const char c : encode_batch(b)) {
    constexpr std::string_view digits = "0123456789abcdef";
    hex += digits[static_cast<uint8_t>(c) >> 4];
    hex += digits[static_cast<uint8_t>(c) & 15];
  }
  EXPECT_EQ(hex, known_batch_hex);
}

TEST(Batch, IsAFewTensOfBytesARankWhereTheFileIs776) {
  state_batch b;
  constexpr int32_t ranks = 1000;
  for (int32_t rank = 0; rank < ranks; ++rank)
    b.states.push_back(rank_in(rank, ranks, "MPI_Recv", rank ^ 1, 7, 41));
  const std::string bytes = encode_batch(b);
  EXPECT_LT(bytes.size(), 50u * ranks) << bytes.size();
  EXPECT_LT(bytes.size() * 10, encode_state(b.states[0]).size() * ranks);
}

// A tree's merge, pairwise at each level, gives the root the states the files give, so the
// diagnosis is the same: classes, deadlocks and their lines.
TEST(Batch, MergedUpATreeDiagnosesAsTheFilesDo) {
  constexpr int32_t ranks = 12;
  std::vector<rank_state> files;
  files.reserve(ranks);
  for (int32_t rank = 0; rank < ranks; ++rank)
    files.push_back(rank == 5 ? computing(rank, ranks, "MPI_Barrier", 30, 100)
                              : rank_in(rank, ranks, "MPI_Recv", rank ^ 1, 7, 41));
  // Leaves of two ranks each (fanout 2), their batches merged level by level as they go up.
  std::vector<std::string> level;
  for (int32_t first = 0; first < ranks; first += 2) {
    state_batch leaf;
    leaf.states = {files[static_cast<size_t>(first)], files[static_cast<size_t>(first) + 1]};
    leaf.tool_ranks = 1;
    level.push_back(encode_batch(leaf));
  }
  while (level.size() > 1) {
    std::vector<std::string> up;
    for (size_t i = 0; i < level.size(); i += 2) {
      batch_read_result a = decode_batch(level[i]);
      ASSERT_TRUE(a.ok()) << a.error;
      if (i + 1 < level.size()) {
        batch_read_result b = decode_batch(level[i + 1]);
        ASSERT_TRUE(b.ok()) << b.error;
        merge_batch(a.batch, std::move(b.batch));
      }
      a.batch.tool_ranks += 1;
      up.push_back(encode_batch(a.batch));
    }
    level = std::move(up);
  }
  batch_read_result root = decode_batch(level.front());
  ASSERT_TRUE(root.ok()) << root.error;
  EXPECT_EQ(root.batch.states.size(), files.size());
  const diagnosis from_files = diagnose(files, now, threshold);
  diagnosis through_tree = diagnose(root.batch.states, now, threshold);
  EXPECT_EQ(format_text(through_tree), format_text(from_files));
  ASSERT_EQ(through_tree.deadlocks.size(), 5u);
  note_tree(through_tree, root.batch);
  EXPECT_EQ(through_tree.tree_tool_ranks, 6u + 3u + 2u + 1u);
  EXPECT_NE(format_text(through_tree).find("Merged through 12 tool ranks of the monitor's tree"),
            std::string::npos)
      << format_text(through_tree);
}

TEST(Batch, BadInputIsOneLineNeverACrash) {
  state_batch b;
  b.states.push_back(full_rank(0, 2));
  const std::string good = encode_batch(b);
  for (size_t n = 0; n < good.size(); ++n) {
    const batch_read_result r = decode_batch(good.substr(0, n));
    EXPECT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error.find('\n'), std::string::npos);
  }
  EXPECT_NE(decode_batch("not a batch").error.find("no SHB1 magic"), std::string::npos);
  EXPECT_NE(decode_batch(good + "x").error.find("bytes after the end"), std::string::npos);
  // A count far beyond the bytes: refused, not allocated.
  std::string huge = "SHB1";
  huge += std::string("\x01\x00\x00\x00\x00", 5);
  huge += std::string("\xff\xff\xff\xff\x0f", 5);
  EXPECT_NE(decode_batch(huge).error.find("exceeds the batch"), std::string::npos)
      << decode_batch(huge).error;
}

class TreeAsk : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("strata_tree_ask_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(TreeAsk, AJobWithoutATreeIsNotAsked) {
  EXPECT_FALSE(ask_tree(dir_, "job-4242", ""));
  EXPECT_FALSE(std::filesystem::exists(tree_asks_dir(dir_, 4242)));
  EXPECT_EQ(rank0_pid_of_key("local_host_1_2-4242"), 4242);
  EXPECT_EQ(rank0_pid_of_key("job"), 0);
  EXPECT_EQ(rank0_pid_of_key("job-12a"), 0);
}

// The round trip the root and a requester make, the root's part done here by hand: its door, the
// ask taken, the ranks' files read (one missing: named, not guessed), the answer read back.
TEST_F(TreeAsk, TheRootAnswersWhatItsLeavesRead) {
  const std::string spool = dir_.string();
  const std::string key = "job-4242";
  for (int32_t rank : {0, 1, 3}) {
    std::ofstream(spool + "/" + key + ".rank" + std::to_string(rank) + ".hang", std::ios::binary)
        << encode_state(rank_in(rank, 4, "MPI_Recv", rank ^ 1, 7, 41));
  }
  ASSERT_TRUE(write_tree_door(spool, 4242, 3, "nodeA"));
  EXPECT_FALSE(ask_tree(spool, key, "nodeB")) << "a door of another host's rank 0";
  const std::optional<tree_request> request = ask_tree(spool, key, "nodeA");
  ASSERT_TRUE(request);
  EXPECT_FALSE(poll_tree(*request));
  EXPECT_FALSE(next_tree_ask(spool, 4343)) << "another job's pid";
  const std::optional<tree_ask> ask = next_tree_ask(spool, 4242);
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->key, key);
  EXPECT_EQ(ask->spool, spool);
  state_batch batch = read_rank_states(ask->spool, ask->key, {0, 1, 2, 3});
  ASSERT_EQ(batch.states.size(), 3u);
  ASSERT_EQ(batch.unread.size(), 1u);
  EXPECT_EQ(batch.unread[0].rank, 2);
  EXPECT_NE(batch.unread[0].why.find("job-4242.rank2.hang"), std::string::npos);
  batch.tool_ranks = 3;
  ASSERT_TRUE(answer_tree_ask(*ask, encode_batch(batch)));
  EXPECT_FALSE(next_tree_ask(spool, 4242)) << "answered: no longer waiting";
  const std::optional<batch_read_result> answer = poll_tree(*request);
  ASSERT_TRUE(answer);
  ASSERT_TRUE(answer->ok()) << answer->error;
  EXPECT_EQ(answer->batch.states.size(), 3u);
  EXPECT_FALSE(std::filesystem::exists(request->answer_path)) << "read once";
  diagnosis d = diagnose(answer->batch.states, now, threshold);
  note_tree(d, answer->batch);
  EXPECT_EQ(d.missing_ranks, std::vector<int32_t>{2});
  EXPECT_NE(format_text(d).find("Not read by the tree: rank 2 ("), std::string::npos)
      << format_text(d);
}

// Two requesters at once: neither ask replaces the other; each is served, with its own answer.
TEST_F(TreeAsk, EveryAskIsAnsweredNotOnlyTheLast) {
  const std::string spool = dir_.string();
  const std::string key = "job-4242";
  ASSERT_TRUE(write_tree_door(spool, 4242, 1, "nodeA"));
  const std::optional<tree_request> first_ask = ask_tree(spool, key, "");
  const std::optional<tree_request> second_ask = ask_tree(spool, key, "");
  ASSERT_TRUE(first_ask && second_ask);
  EXPECT_NE(first_ask->answer_path, second_ask->answer_path);
  std::vector<std::string> served;
  while (const std::optional<tree_ask> ask = next_tree_ask(spool, 4242)) {
    state_batch batch;
    batch.tool_ranks = 1;
    ASSERT_TRUE(answer_tree_ask(*ask, encode_batch(batch)));
    served.push_back(ask->id);
    ASSERT_LE(served.size(), 2u);
  }
  EXPECT_EQ(served.size(), 2u);
  EXPECT_TRUE(poll_tree(*first_ask));
  EXPECT_TRUE(poll_tree(*second_ask));
}

// A requester that stops waiting withdraws its ask: the root leaves no answer that would stay,
// also when the requester gave up while the root was merging (the ask was taken before).
TEST_F(TreeAsk, AnAskGivenUpIsNotAnswered) {
  const std::string spool = dir_.string();
  ASSERT_TRUE(write_tree_door(spool, 4242, 1, "nodeA"));
  const std::optional<tree_request> request = ask_tree(spool, "job-4242", "");
  ASSERT_TRUE(request);
  const std::optional<tree_ask> ask = next_tree_ask(spool, 4242);
  ASSERT_TRUE(ask);
  give_up(*request);
  EXPECT_FALSE(next_tree_ask(spool, 4242));
  state_batch batch;
  batch.tool_ranks = 1;
  EXPECT_FALSE(answer_tree_ask(*ask, encode_batch(batch)));
  EXPECT_FALSE(std::filesystem::exists(request->answer_path)) << "an answer nobody waits for";
  EXPECT_FALSE(poll_tree(*request));
}

TEST_F(TreeAsk, AMalformedAskIsDroppedNotServed) {
  const std::string spool = dir_.string();
  ASSERT_TRUE(write_tree_door(spool, 4242, 1, "nodeA"));
  const std::string path = tree_asks_dir(spool, 4242) + "/1-2";
  for (const std::string& text :
       {std::string("nonsense"), std::string("strata.hang-ask/1\n1\n../etc-4242\n") + spool + "\n",
        std::string("strata.hang-ask/1\n1\njob-4242\n/no/such/spool\n")}) {
    std::ofstream(path) << text;
    EXPECT_FALSE(next_tree_ask(spool, 4242)) << text;
    EXPECT_FALSE(std::filesystem::exists(path));
  }
}

// What a job that is gone left of its tree: its answers, and the door and asks of a root that was
// killed; another job's answer stays, as does a door whose rank 0 still runs here.
TEST_F(TreeAsk, AGoneJobsTreeFilesAreRemoved) {
  const std::string spool = dir_.string();
  // A pid no process has: above the kernel's largest.
  const int64_t gone = 1LL << 40;
  const std::string key = "job-" + std::to_string(gone);
  ASSERT_TRUE(write_tree_door(spool, gone, 3, "nodeA"));
  ASSERT_TRUE(ask_tree(spool, key, ""));
  std::ofstream(tree_answer_path(spool, key, "7-8")) << "late";
  std::ofstream(tree_answer_path(spool, "other-5", "7-8")) << "not this job's";
  char here[256] = {0};
  ::gethostname(here, sizeof(here) - 1);
  const auto self = static_cast<int64_t>(::getpid());
  ASSERT_TRUE(write_tree_door(spool, self, 3, here));
  remove_tree_files(spool, key);
  remove_tree_files(spool, "job-" + std::to_string(self));
  EXPECT_FALSE(std::filesystem::exists(tree_door_path(spool, gone)));
  EXPECT_FALSE(std::filesystem::exists(tree_asks_dir(spool, gone)));
  EXPECT_FALSE(std::filesystem::exists(tree_answer_path(spool, key, "7-8")));
  EXPECT_TRUE(std::filesystem::exists(tree_answer_path(spool, "other-5", "7-8")));
  EXPECT_TRUE(std::filesystem::exists(tree_door_path(spool, self))) << "its rank 0 runs";
}

} // namespace
} // namespace strata::hang
