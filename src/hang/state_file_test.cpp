#include "hang/state.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>
#include <unistd.h>

namespace strata::hang {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/hang_state_" + std::to_string(::getpid()) + "_" + name;
}

rank_state sample() {
  rank_state r;
  r.world_rank = 2;
  r.world_size = 8;
  r.pid = 4242;
  r.host = "node17";
  r.observed_ns = 5'000'000'000;
  r.threads_not_described = 3;
  thread_state t;
  t.phase = thread_phase::in_mpi;
  t.lang = language::fortran;
  t.os_thread = 99;
  t.routine = "MPI_Waitall";
  t.file = "solver/halo.f90";
  t.line = 120;
  t.function = "exchange_halo";
  t.comm = {0xabc, 4, 0, 2};
  t.since_ns = 4'000'000'000;
  t.calls_completed = 77;
  t.pending_total = 9;
  for (int i = 0; i < 6; ++i)
    t.pending.push_back({i % 2 == 0 ? op_kind::send : op_kind::recv,
                         i < 3,
                         i,
                         10 + i,
                         uint64_t(1000 * i),
                         {0xabc, 4, 0, 2}});
  // A nonblocking collective (an MPI_Ibcast from rank 2) and a matched receive (MPI_Imrecv).
  t.pending[4] = {op_kind::collective, false, 2, 0, 4000, {0xabc, 4, 0, 2}, 2};
  t.pending[5] = {op_kind::matched_recv, false, no_peer, 0, 5000, {}};
  r.threads.push_back(t);
  thread_state idle;
  idle.phase = thread_phase::outside_mpi;
  idle.routine = "MPI_Allreduce";
  idle.file = std::string(200, 'd') + "/main.c"; // longer than the field: its end is kept
  idle.line = 3;
  idle.since_ns = 3'000'000'000;
  r.threads.push_back(idle);
  // A Python thread (mpi4py): its site the script's line, the compiled caller beside it.
  thread_state python;
  python.phase = thread_phase::in_mpi;
  python.lang = language::python;
  python.os_thread = 101;
  python.routine = "MPI_Mprobe";
  python.file = "/home/user/ring.py";
  python.line = 12;
  python.function = "<module>";
  python.native_file = "src/mpi4py/MPI.c";
  python.native_line = 140233;
  python.native_function = "__pyx_pf_6mpi4py_3MPI_4Comm_158recv";
  python.peer = 3;
  python.tag = 9;
  python.comm = {0xabc, 4, 0, 2};
  python.since_ns = 4'500'000'000;
  r.threads.push_back(python);
  return r;
}

constexpr size_t header_bytes = 64, slot_bytes = 712, slot_bytes_v2 = 560;

// The file a version 2 writer (a job started under the previous Strata) made of `state`: the
// same header, each slot up to the native call site.
std::string as_version_2(const rank_state& state) {
  const std::string v3 = encode_state(state);
  std::string v2 = v3.substr(0, header_bytes);
  v2[8] = 2;
  const auto bytes = static_cast<uint32_t>(slot_bytes_v2);
  std::memcpy(v2.data() + 16, &bytes, sizeof(bytes));
  for (size_t at = header_bytes; at < v3.size(); at += slot_bytes)
    v2 += v3.substr(at, slot_bytes_v2);
  return v2;
}

// The state as a file of this version keeps it (long paths cut), without the native call sites
// (what a version 2 file keeps).
rank_state without_native_sites(const rank_state& written) {
  rank_state state = *parse_state(encode_state(written)).state;
  for (thread_state& t : state.threads) {
    t.native_file.clear();
    t.native_line = 0;
    t.native_function.clear();
  }
  return state;
}

TEST(StateFile, EncodedStateReadsBackWithLongPathsKeepingTheirEnd) {
  const rank_state r = sample();
  const std::string bytes = encode_state(r);
  EXPECT_EQ(bytes.size(), header_bytes + 3 * slot_bytes) << "a few hundred bytes per thread";
  const state_read_result read = parse_state(bytes, "x");
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_EQ(read.state->world_rank, 2);
  EXPECT_EQ(read.state->world_size, 8);
  EXPECT_EQ(read.state->host, "node17");
  EXPECT_EQ(read.state->observed_ns, 5'000'000'000u);
  EXPECT_EQ(read.state->threads_not_described, 3u);
  ASSERT_EQ(read.state->threads.size(), 3u);
  EXPECT_EQ(read.state->threads[0], r.threads[0]);
  EXPECT_TRUE(read.state->threads[1].file.ends_with("ddd/main.c"));
  EXPECT_EQ(read.state->threads[1].file.size(), max_file - 1);
  // A Python call: the script's line, and the compiled caller's beside it.
  EXPECT_EQ(read.state->threads[2], r.threads[2]);
  EXPECT_EQ(read.state->threads[2].native_file, "src/mpi4py/MPI.c");
  EXPECT_EQ(read.state->threads[2].native_line, 140233u);
}

TEST(StateFile, WriterUpdatesInPlaceAndTheReaderSeesEachUpdate) {
  const std::string path = temp_path("writer.hang");
  std::string error;
  std::optional<state_writer> w = state_writer::open(path, 1, 8, 2, error);
  ASSERT_TRUE(w) << error;
  state_read_result read = read_state_file(path);
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_TRUE(read.state->threads.empty()) << "unused slots are not threads";
  thread_state t = sample().threads[0];
  w->write(1, t);
  read = read_state_file(path);
  ASSERT_TRUE(read.ok()) << read.error;
  ASSERT_EQ(read.state->threads.size(), 1u);
  EXPECT_EQ(read.state->threads[0], t);
  EXPECT_EQ(read.state->world_rank, 1);
  w->leave_call(1, 4'500'000'000);
  read = read_state_file(path);
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_EQ(read.state->threads[0].phase, thread_phase::outside_mpi);
  EXPECT_EQ(read.state->threads[0].since_ns, 4'500'000'000u);
  EXPECT_EQ(read.state->threads[0].calls_completed, 78u);
  EXPECT_EQ(read.state->threads[0].routine, "MPI_Waitall") << "the last call stays named";
  EXPECT_EQ(read.state->threads_not_described, 0u);
  w->set_threads_not_described(55);
  read = read_state_file(path);
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_EQ(read.state->threads_not_described, 55u);
  std::remove(path.c_str());
}

// A reader racing a writer never returns a mix of two updates: every field of a slot written as
// one update carries the same number.
TEST(StateFile, ReaderNeverReturnsATornSlotWhileTheWriterRuns) {
  const std::string path = temp_path("race.hang");
  std::string error;
  std::optional<state_writer> w = state_writer::open(path, 0, 1 << 20, 1, error);
  ASSERT_TRUE(w) << error;
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    thread_state t;
    t.phase = thread_phase::in_mpi;
    t.routine = "MPI_Recv";
    for (int32_t i = 1; !stop.load(); i = i % 1000000 + 1) {
      t.peer = i;
      t.tag = i;
      t.line = static_cast<uint32_t>(i);
      t.since_ns = static_cast<uint64_t>(i);
      t.file = std::to_string(i);
      w->write(0, t);
      // A pause now and then (the profile writes ten times a second), so that some reads fall
      // between two writes even when the reader is the slower thread on a loaded machine.
      if (i % 256 == 0)
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  });
  int whole = 0;
  for (int reads = 0; reads < 2000 || (whole == 0 && reads < 200000); ++reads) {
    const state_read_result read = read_state_file(path);
    ASSERT_TRUE(read.ok()) << read.error;
    if (read.state->threads.empty() || read.state->threads[0].torn)
      continue;
    const thread_state& t = read.state->threads[0];
    ASSERT_EQ(t.tag, t.peer);
    ASSERT_EQ(t.line, static_cast<uint32_t>(t.peer));
    ASSERT_EQ(t.since_ns, static_cast<uint64_t>(t.peer));
    ASSERT_EQ(t.file, std::to_string(t.peer));
    ++whole;
  }
  stop = true;
  writer.join();
  EXPECT_GT(whole, 0);
  std::remove(path.c_str());
}

TEST(StateFile, ASlotLeftMidUpdateIsMarkedTornNotMisread) {
  rank_state r = sample();
  r.threads[0].torn = true; // encoded with an odd sequence counter
  const state_read_result read = parse_state(encode_state(r));
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_TRUE(read.state->threads[0].torn);
  EXPECT_TRUE(read.state->threads[0].routine.empty());
}

TEST(StateFile, EveryTruncationIsOneClearError) {
  const std::string bytes = encode_state(sample());
  for (size_t size = 0; size < bytes.size(); ++size) {
    const state_read_result read = parse_state(bytes.substr(0, size), "r.hang");
    ASSERT_FALSE(read.ok()) << size;
    ASSERT_TRUE(read.error.starts_with("r.hang: ")) << read.error;
  }
  EXPECT_EQ(parse_state(bytes.substr(0, 100), "r.hang").error,
            "r.hang: truncated: 100 bytes, its header says 2200");
  EXPECT_EQ(parse_state("hello", "r.hang").error,
            "r.hang: not a Strata hang state file (no strata.hang-state header)");
}

// Jobs started under an earlier Strata leave version 2 files: slots of 560 bytes, without the
// native call site.
TEST(StateFile, VersionTwoFilesOfJobsStartedEarlierAreRead) {
  const std::string bytes = as_version_2(sample());
  ASSERT_EQ(bytes.size(), header_bytes + 3 * slot_bytes_v2);
  const state_read_result read = parse_state(bytes, "f");
  ASSERT_TRUE(read.ok()) << read.error;
  const rank_state want = without_native_sites(sample());
  EXPECT_EQ(read.state->host, want.host);
  EXPECT_EQ(read.state->threads_not_described, want.threads_not_described);
  ASSERT_EQ(read.state->threads.size(), want.threads.size());
  for (size_t i = 0; i < want.threads.size(); ++i)
    EXPECT_EQ(read.state->threads[i], want.threads[i]) << i;
  // The file as it is on disk, read while its writer might be running.
  const std::string path = temp_path("v2.hang");
  std::ofstream(path, std::ios::binary) << bytes;
  const state_read_result from_file = read_state_file(path);
  ASSERT_TRUE(from_file.ok()) << from_file.error;
  EXPECT_EQ(from_file.state->threads, read.state->threads);
  std::remove(path.c_str());
  // Each version's slots are its own size: a version 2 file claiming version 3 is malformed.
  std::string mislabelled = bytes;
  mislabelled[8] = 3;
  EXPECT_EQ(parse_state(mislabelled, "f").error,
            "f: malformed header (header or slot size does not match version 3)");
}

// And version 1 files: as version 2 but for the header's tail, a host name of up to 15 bytes
// where version 2 keeps 11 and the count of threads.
TEST(StateFile, VersionOneFilesOfJobsStartedEarlierAreRead) {
  std::string bytes = as_version_2(sample());
  bytes[8] = 1;
  const std::string host_v1 = "node-0123-abc"; // 13 bytes: too long for version 2's field
  std::memset(bytes.data() + 48, 0, 16);
  std::memcpy(bytes.data() + 48, host_v1.data(), host_v1.size());
  const state_read_result read = parse_state(bytes, "f");
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_EQ(read.state->host, host_v1);
  EXPECT_EQ(read.state->threads_not_described, 0u);
  EXPECT_EQ(read.state->threads, without_native_sites(sample()).threads);
}

TEST(StateFile, NewerVersionsAndBadFieldsAreNamed) {
  std::string bytes = encode_state(sample());
  bytes[8] = 4;
  EXPECT_EQ(parse_state(bytes, "f").error,
            "f: strata.hang-state version 4, this strata reads 3 and earlier");
  bytes[8] = 0;
  EXPECT_EQ(parse_state(bytes, "f").error,
            "f: strata.hang-state version 0, this strata reads 3 and earlier");
  bytes = encode_state(sample());
  bytes[64 + 8] = 9; // the first slot's phase
  EXPECT_EQ(parse_state(bytes, "f").error, "f: thread slot 0: unknown phase 9");
  bytes = encode_state(sample());
  const int32_t far_peer = 1000;
  std::memcpy(bytes.data() + 64 + 24, &far_peer, sizeof(far_peer)); // the first slot's peer
  EXPECT_EQ(parse_state(bytes, "f").error, "f: thread slot 0: a peer outside the world of 8 ranks");
  // The fifth pending operation (a collective): of no collective, then of an unknown kind.
  const size_t fifth = 64 + 272 + 4 * 48;
  bytes = encode_state(sample());
  bytes[fifth + 2] = 0;
  EXPECT_EQ(parse_state(bytes, "f").error, "f: thread slot 0: a malformed pending operation");
  bytes[fifth + 2] = 23;
  EXPECT_EQ(parse_state(bytes, "f").error, "f: thread slot 0: a malformed pending operation");
  bytes[fifth] = 5;
  EXPECT_EQ(parse_state(bytes, "f").error,
            "f: thread slot 0: a pending operation of unknown kind 5");
}

TEST(StateFile, AWorldLargerThanAnyMachineIsAMalformedHeader) {
  std::string bytes = encode_state(sample());
  const int32_t huge = 1 << 30;
  std::memcpy(bytes.data() + 28, &huge, sizeof(huge)); // world_size
  EXPECT_EQ(parse_state(bytes, "f").error, "f: malformed header (rank 2 of 1073741824)");
}

TEST(StateFile, ReadingAMissingFileSaysSo) {
  const state_read_result read = read_state_file(temp_path("absent.hang"));
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error.find("cannot open (No such file or directory)"), std::string::npos);
}

TEST(Communicator, MembersFromFirstAndStride) {
  const communicator odd{1, 4, 1, 2};
  EXPECT_TRUE(odd.contains(7));
  EXPECT_FALSE(odd.contains(9));
  EXPECT_FALSE(odd.contains(2));
  EXPECT_EQ(odd.member(3), 7);
  EXPECT_FALSE((communicator{1, 4, 0, 0}.members_known()));
}

} // namespace
} // namespace strata::hang
