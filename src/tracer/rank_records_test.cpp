// A job's records through the library the way the trace module's finalize takes them (local
// definitions, unification, each rank's events, the job's definitions, the one OTF2 writer), read
// back with the analyzer's reader: the archive says what the records said.
#include "tracer/job_definitions.hpp"
#include "tracer/otf2_writer.hpp"
#include "tracer/rank_records.hpp"

#include "analyzer/analysis.hpp"
#include "analyzer/trace_reader.hpp"
#include "common/message_kinds.hpp"

#include <gtest/gtest.h>
#include <strata/module.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace strata::trace {
namespace {

const std::vector<std::string> function_names = {
    "MPI_Init",         "MPI_Isend",      "MPI_Irecv",     "MPI_Waitall", "MPI_Allreduce",
    "MPI_Send",         "MPI_Recv",       "MPI_Comm_rank", "MPI_Put",     "MPI_Get",
    "MPI_Fetch_and_op", "MPI_Accumulate", "MPI_Start"};
enum fid : uint32_t {
  init,
  isend,
  irecv,
  waitall,
  allreduce,
  send,
  recv,
  comm_rank,
  put,
  get,
  fetch_and_op,
  accumulate,
  start
};

std::vector<fn_info> classified() {
  std::vector<fn_info> out;
  for (const std::string& name : function_names)
    out.push_back(classify(name));
  return out;
}

// One rank of a job: its records and what it knows besides them.
struct test_rank {
  event_buffer records{64ull << 20, limit_policy::stop};
  rank_context context;
  clock_line clock;
  uint64_t window_begin = 0;

  explicit test_rank(int size) {
    context.host = "node-a";
    context.function_names = function_names;
    std::vector<int> world;
    for (int r = 0; r < size; ++r)
      world.push_back(r);
    context.comm_members = {{}, world};
    // Addresses are fake: 0x100 * line in "app.c", 0x999 in no known binary, 0xaaa in a
    // stripped one (no line information).
    context.resolve = [](const std::vector<uint64_t>& addresses) {
      std::vector<source_site> out;
      for (uint64_t a : addresses)
        out.push_back(a == 0x999   ? source_site{"?", 0}
                      : a == 0xaaa ? source_site{"app+0xaaa", 0}
                                   : source_site{"app.c", static_cast<uint32_t>(a / 0x100)});
      return out;
    };
  }

  record& add(record_kind kind, uint32_t index, uint64_t t0, uint64_t t1, uint64_t site = 0) {
    record* r = records.append();
    *r = record{};
    r->t_enter = t0;
    r->t_leave = t1;
    r->call_site = site;
    r->id = record::make_id(kind, index);
    r->peer = STRATA_NO_RANK;
    r->tag = STRATA_NO_TAG;
    r->source = STRATA_NO_RANK;
    r->recv_tag = STRATA_NO_TAG;
    r->root = STRATA_NO_RANK;
    return *r;
  }
  record& call(fid f, uint64_t t0, uint64_t t1, uint64_t site = 0) {
    record& r = add(record_kind::mpi_call, f, t0, t1, site);
    // A one-sided operation's window is no communicator of the trace's.
    if (f != init && f != comm_rank && f != waitall && f < put)
      r.comm = 1;
    return r;
  }
};

// What finalize does, without MPI: every rank's part, then rank 0's global definitions.
std::vector<rank_figures> write_job(const std::string& dir, std::deque<test_rank>& ranks) {
  std::vector<local_index> locals;
  std::vector<local_defs> defs;
  for (test_rank& r : ranks) {
    locals.push_back(collect_local(r.records, r.context));
    defs.push_back(locals.back().defs);
  }
  global_defs global;
  std::vector<rank_map> maps;
  unify(defs, global, maps);
  EXPECT_EQ(prepare_archive_directory(dir), "");
  archive_writer archive(dir);
  EXPECT_TRUE(archive.ok()) << archive.error();
  archive.use_serial_collectives();
  archive.open_event_files();
  const std::vector<fn_info> functions = classified();
  std::vector<rank_figures> figures(ranks.size());
  std::vector<archive_writer::local_definitions> locals_out;
  for (size_t r = 0; r < ranks.size(); ++r) {
    location_writer& events = archive.location(r);
    record_writer writer(events, functions, ranks[r].context.comm_members, ranks[r].clock,
                         locals[r], maps[r]);
    writer.write_all(ranks[r].records, ranks[r].window_begin, figures[r]);
    writer.finish();
    figures[r].events = events.events();
    figures[r].last = writer.last_time();
    figures[r].dropped = ranks[r].records.dropped();
    locals_out.push_back({r, {{ranks[r].clock.correct(10), 0, 5.0}}});
  }
  EXPECT_EQ(archive.close_event_files(), OTF2_SUCCESS) << archive.error();
  EXPECT_EQ(archive.write_local_definitions(locals_out), OTF2_SUCCESS) << archive.error();
  EXPECT_EQ(archive.write_global_definitions(
                describe_job(global, figures, {0, 0, 1000}, limit_policy::stop)),
            OTF2_SUCCESS)
      << archive.error();
  EXPECT_EQ(archive.close(), OTF2_SUCCESS) << archive.error();
  return figures;
}

// The events as the analyzer's reader hands them over, one line each, per rank.
class event_lines final : public analyze::event_handler {
public:
  explicit event_lines(const analyze::definitions& d) : defs(d), lines(d.ranks()) {}
  const analyze::definitions& defs;
  std::vector<std::vector<std::string>> lines;

  void enter(uint32_t rank, uint64_t t, uint32_t region, uint32_t site) override {
    std::string at;
    if (site != analyze::no_call_site)
      at = " @" + defs.call_sites[site].file + ":" + std::to_string(defs.call_sites[site].line);
    put(rank, t, "enter " + defs.regions[region].name + at);
  }
  void leave(uint32_t rank, uint64_t t, uint32_t region) override {
    put(rank, t, "leave " + defs.regions[region].name);
  }
  void send(uint32_t rank, uint64_t t, uint32_t to, uint32_t comm, uint32_t tag,
            uint64_t bytes) override {
    put(rank, t, msg("send", to, comm, tag, bytes));
  }
  void isend(uint32_t rank, uint64_t t, uint32_t to, uint32_t comm, uint32_t tag, uint64_t bytes,
             uint64_t request) override {
    put(rank, t, msg("isend", to, comm, tag, bytes) + " r" + std::to_string(request));
  }
  void partitioned_isend(uint32_t rank, uint64_t t, uint32_t to, uint32_t comm, uint32_t tag,
                         uint64_t bytes, uint64_t request) override {
    put(rank, t, msg("partitioned isend", to, comm, tag, bytes) + " r" + std::to_string(request));
  }
  void isend_complete(uint32_t rank, uint64_t t, uint64_t request) override {
    put(rank, t, "isend_complete r" + std::to_string(request));
  }
  void irecv_request(uint32_t rank, uint64_t t, uint64_t request) override {
    put(rank, t, "irecv_request r" + std::to_string(request));
  }
  void recv(uint32_t rank, uint64_t t, uint32_t from, uint32_t comm, uint32_t tag,
            uint64_t bytes) override {
    put(rank, t, msg("recv", from, comm, tag, bytes));
  }
  void irecv(uint32_t rank, uint64_t t, uint32_t from, uint32_t comm, uint32_t tag, uint64_t bytes,
             uint64_t request) override {
    put(rank, t, msg("irecv", from, comm, tag, bytes) + " r" + std::to_string(request));
  }
  void request_cancelled(uint32_t rank, uint64_t t, uint64_t request) override {
    put(rank, t, "cancelled r" + std::to_string(request));
  }
  void collective_end(uint32_t rank, uint64_t t, uint32_t op, uint32_t comm, uint32_t root,
                      uint64_t sent, uint64_t received) override {
    put(rank, t,
        "collective op" + std::to_string(op) + " " + defs.comms[comm].name + " root " +
            (root == analyze::no_root ? "-" : std::to_string(root)) + " " + std::to_string(sent) +
            "/" + std::to_string(received));
  }

  void one_sided(uint32_t rank, uint64_t t, uint8_t kind, uint32_t target,
                 uint64_t bytes) override {
    put(rank, t,
        std::string(common::pair_kind_names[kind]) + " " + std::to_string(target) + " " +
            std::to_string(bytes) + "B");
  }

private:
  void put(uint32_t rank, uint64_t t, const std::string& what) {
    lines[rank].push_back(std::to_string(t) + " " + what);
  }
  std::string msg(const char* kind, uint32_t peer, uint32_t comm, uint32_t tag, uint64_t bytes) {
    return std::string(kind) + " " + std::to_string(peer) + " " + defs.comms[comm].name + " tag " +
           std::to_string(tag) + " " + std::to_string(bytes) + "B";
  }
};

class RankRecordsTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("strata_tracer_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string trace() const { return (dir_ / "trace").string(); }

  std::vector<std::vector<std::string>> read_back() {
    analyze::trace_reader reader(trace());
    event_lines lines(reader.defs());
    reader.read_events(lines);
    return lines.lines;
  }

  fs::path dir_;
};

TEST_F(RankRecordsTest, CallsRegionsAndRequestsBecomeTheEventsOfEachRank) {
  std::deque<test_rank> ranks;
  ranks.emplace_back(2);
  ranks.emplace_back(2);
  // Rank 1's clock is 1000 ns behind rank 0's.
  ranks[1].clock = {0, 1000, 0, 0};
  for (int r = 0; r < 2; ++r) {
    test_rank& k = ranks[static_cast<size_t>(r)];
    k.add(record_kind::region_enter, 0, 100, 100, 0x100 * 7);
    k.context.region_names = {"solver"};
    record& ir = k.call(irecv, 110, 120, 0x100 * 8);
    ir.peer = 1 - r;
    ir.request = 1;
    record& is = k.call(isend, 130, 140, 0x100 * 9);
    is.peer = 1 - r;
    is.tag = 5;
    is.bytes_sent = 64;
    is.request = 2;
    k.call(waitall, 150, 200, 0x999); // no line: no call site
    record& received = k.add(record_kind::recv_complete, 0, 200, 200);
    received.request = 1;
    received.comm = 1;
    received.source = 1 - r; // from the status: a rank in the communicator
    received.recv_tag = 5;
    received.bytes_received = 64;
    k.add(record_kind::send_complete, 0, 200, 200).request = 2;
    record& red = k.call(allreduce, 210, 300);
    red.bytes_sent = red.bytes_received = 8;
    k.add(record_kind::region_leave, 0, 310, 310);
  }
  const std::vector<rank_figures> figures = write_job(trace(), ranks);
  EXPECT_EQ(figures[0].events, 16u); // with MpiCollectiveBegin, which the reader passes over
  EXPECT_EQ(figures[0].first, 100u);
  EXPECT_EQ(figures[1].first, 1100u);
  EXPECT_EQ(figures[1].last, 1310u);
  const auto lines = read_back();
  const std::vector<std::string> rank0 = {"100 enter solver @app.c:7",
                                          "110 enter MPI_Irecv @app.c:8",
                                          "120 irecv_request r1",
                                          "120 leave MPI_Irecv",
                                          "130 enter MPI_Isend @app.c:9",
                                          "130 isend 1 MPI_COMM_WORLD tag 5 64B r2",
                                          "140 leave MPI_Isend",
                                          "150 enter MPI_Waitall",
                                          "200 irecv 1 MPI_COMM_WORLD tag 5 64B r1",
                                          "200 isend_complete r2",
                                          "200 leave MPI_Waitall",
                                          "210 enter MPI_Allreduce",
                                          "300 collective op" +
                                              std::to_string(OTF2_COLLECTIVE_OP_ALLREDUCE) +
                                              " MPI_COMM_WORLD root - 8/8",
                                          "300 leave MPI_Allreduce",
                                          "310 leave solver"};
  EXPECT_EQ(lines[0], rank0);
  ASSERT_EQ(lines[1].size(), rank0.size());
  EXPECT_EQ(lines[1][0], "1100 enter solver @app.c:7"); // on rank 0's clock
  EXPECT_EQ(lines[1][5], "1130 isend 0 MPI_COMM_WORLD tag 5 64B r2");
  // And the analysis sees two messages and one complete collective.
  const analyze::report report = analyze::analyze_trace(trace());
  EXPECT_EQ(report.messages, 2u);
  EXPECT_EQ(report.collectives, 1u);
  EXPECT_TRUE(report.warnings.empty()) << report.warnings.front();
}

TEST_F(RankRecordsTest, BlockingMessagesAndTheWindow) {
  std::deque<test_rank> ranks;
  ranks.emplace_back(2);
  ranks.emplace_back(2);
  for (test_rank& k : ranks) {
    k.window_begin = 50;
    k.call(init, 0, 40); // before the window: left out
  }
  record& s = ranks[0].call(send, 100, 110);
  s.peer = 1;
  s.tag = 3;
  s.bytes_sent = 16;
  record& r = ranks[1].call(recv, 90, 120);
  r.peer = STRATA_ANY_SOURCE_RANK;
  r.source = 0;
  r.recv_tag = 3;
  r.bytes_received = 16;
  ranks[1].call(comm_rank, 130, 131); // no communicator of the trace's: a plain region
  const std::vector<rank_figures> figures = write_job(trace(), ranks);
  EXPECT_EQ(figures[0].first, 100u);
  const auto lines = read_back();
  EXPECT_EQ(lines[0],
            (std::vector<std::string>{"100 enter MPI_Send", "100 send 1 MPI_COMM_WORLD tag 3 16B",
                                      "110 leave MPI_Send"}));
  EXPECT_EQ(lines[1],
            (std::vector<std::string>{"90 enter MPI_Recv", "120 recv 0 MPI_COMM_WORLD tag 3 16B",
                                      "120 leave MPI_Recv", "130 enter MPI_Comm_rank",
                                      "131 leave MPI_Comm_rank"}));
}

// One-sided operations are RMA events on the archive's one window, of every rank, their targets
// world ranks (none to MPI_PROC_NULL); the analysis counts each as a pair of its kind, origin to
// target, and leaves them out of the two-sided pairs.
TEST_F(RankRecordsTest, OneSidedOperationsAreRmaEventsToWorldRanks) {
  std::deque<test_rank> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.emplace_back(3);
  record& p = ranks[0].call(put, 100, 110);
  p.peer = 2;
  p.bytes_sent = 24;
  record& g = ranks[1].call(get, 100, 105);
  g.peer = 0;
  g.bytes_received = 40; // what it brings back
  record& f = ranks[2].call(fetch_and_op, 100, 104);
  f.peer = 1;
  f.bytes_sent = 8;
  record& a = ranks[2].call(accumulate, 110, 114);
  a.peer = 1;
  a.bytes_sent = 12;
  record& nowhere = ranks[2].call(put, 120, 121);
  nowhere.peer = STRATA_PROC_NULL_RANK;
  nowhere.bytes_sent = 4;
  record& s = ranks[0].call(send, 130, 131);
  s.peer = 1;
  s.tag = 5;
  write_job(trace(), ranks);
  const auto lines = read_back();
  EXPECT_EQ(lines[0],
            (std::vector<std::string>{"100 enter MPI_Put", "100 put 2 24B", "110 leave MPI_Put",
                                      "130 enter MPI_Send", "130 send 1 MPI_COMM_WORLD tag 5 0B",
                                      "131 leave MPI_Send"}));
  EXPECT_EQ(lines[1],
            (std::vector<std::string>{"100 enter MPI_Get", "100 get 0 40B", "105 leave MPI_Get"}));
  EXPECT_EQ(lines[2],
            (std::vector<std::string>{"100 enter MPI_Fetch_and_op", "100 accumulate 1 8B",
                                      "104 leave MPI_Fetch_and_op", "110 enter MPI_Accumulate",
                                      "110 accumulate 1 12B", "114 leave MPI_Accumulate",
                                      "120 enter MPI_Put", "121 leave MPI_Put"}));
  const analyze::report report = analyze::analyze_trace(trace());
  std::vector<std::tuple<uint32_t, uint32_t, std::string, uint64_t, uint64_t>> pairs;
  for (const analyze::message_pair& m : report.pairs)
    pairs.emplace_back(m.from, m.to, m.kind, m.messages, m.bytes);
  EXPECT_EQ(pairs, (std::vector<std::tuple<uint32_t, uint32_t, std::string, uint64_t, uint64_t>>{
                       {0, 1, "point_to_point", 1, 0},
                       {0, 2, "put", 1, 24},
                       {1, 0, "get", 1, 40},
                       {2, 1, "accumulate", 2, 20}}));
}

// The starts of persistent and partitioned requests: an MpiIsend (or MpiIrecvRequest) each inside
// the start, a partitioned one marked so, which the analysis counts as a pair of its own kind.
TEST_F(RankRecordsTest, PartitionedStartsAreMarkedAndCountedApart) {
  std::deque<test_rank> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back(2);
  const auto started = [&](int rank, uint32_t index, uint64_t t, uint32_t request, int32_t peer,
                           int64_t bytes) {
    record& r = ranks[static_cast<size_t>(rank)].add(record_kind::started, index, t, t);
    r.request = request;
    r.comm = 1;
    r.peer = peer;
    r.tag = 7;
    r.bytes_sent = bytes;
  };
  ranks[0].call(start, 100, 110);
  started(0, started_partitioned, 100, 1, 1, 96);
  ranks[0].call(start, 120, 130);
  started(0, 0, 120, 2, 1, 8);
  ranks[1].call(start, 100, 101);
  started(1, started_partitioned | started_receive, 100, 1, 0, 0);
  write_job(trace(), ranks);
  const auto lines = read_back();
  EXPECT_EQ(lines[0],
            (std::vector<std::string>{
                "100 enter MPI_Start", "100 partitioned isend 1 MPI_COMM_WORLD tag 7 96B r1",
                "110 leave MPI_Start", "120 enter MPI_Start",
                "120 isend 1 MPI_COMM_WORLD tag 7 8B r2", "130 leave MPI_Start"}));
  EXPECT_EQ(lines[1], (std::vector<std::string>{"100 enter MPI_Start", "100 irecv_request r1",
                                                "101 leave MPI_Start"}));
  const analyze::report report = analyze::analyze_trace(trace());
  std::vector<std::tuple<uint32_t, uint32_t, std::string, uint64_t, uint64_t>> pairs;
  for (const analyze::message_pair& m : report.pairs)
    pairs.emplace_back(m.from, m.to, m.kind, m.messages, m.bytes);
  EXPECT_EQ(pairs, (std::vector<std::tuple<uint32_t, uint32_t, std::string, uint64_t, uint64_t>>{
                       {0, 1, "persistent", 1, 8}, {0, 1, "partitioned", 1, 96}}));
}

// A communicator with a process outside the application's world (another tool's communicator of
// every process, tool ranks included; an intercommunicator to spawned processes): the core gives
// such a process a negative world rank. The archive names only the application's processes, so
// the communicator is left out of the definitions, which stay readable on their way up the
// tree, and its calls are plain regions.
TEST_F(RankRecordsTest, ACommunicatorWithProcessesOutsideTheWorldIsNotNamed) {
  constexpr int outside = -32766; // what translating a rank outside the world gives
  std::deque<test_rank> ranks;
  ranks.emplace_back(2);
  ranks.emplace_back(2);
  for (test_rank& k : ranks)
    k.context.comm_members.push_back({0, 1, outside});
  record& s = ranks[0].call(send, 100, 110);
  s.peer = 1;
  s.tag = 3;
  s.bytes_sent = 16;
  record& tool = ranks[0].call(send, 120, 130); // to the outside process
  tool.comm = 2;
  tool.peer = outside;
  tool.bytes_sent = 8;
  record& all = ranks[0].call(allreduce, 140, 150);
  all.comm = 2;
  record& r = ranks[1].call(recv, 90, 120);
  r.peer = 0;
  r.source = 0;
  r.recv_tag = 3;
  r.bytes_received = 16;
  record& all1 = ranks[1].call(allreduce, 140, 150);
  all1.comm = 2;
  // Rank 1's definitions as its parent in the tree receives them.
  const local_index one = collect_local(ranks[1].records, ranks[1].context);
  EXPECT_EQ(one.defs.comms, (std::vector<std::vector<int>>{{0, 1}}));
  merged_defs received;
  EXPECT_TRUE(deserialize(serialize(from_local(one.defs)), received, 2));
  write_job(trace(), ranks);
  const auto lines = read_back();
  EXPECT_EQ(lines[0], (std::vector<std::string>{
                          "100 enter MPI_Send", "100 send 1 MPI_COMM_WORLD tag 3 16B",
                          "110 leave MPI_Send", "120 enter MPI_Send", "130 leave MPI_Send",
                          "140 enter MPI_Allreduce", "150 leave MPI_Allreduce"}));
  const analyze::report report = analyze::analyze_trace(trace());
  EXPECT_EQ(report.ranks, 2u);
  EXPECT_EQ(report.messages, 1u);
  EXPECT_EQ(report.collectives, 0u);
  EXPECT_TRUE(report.warnings.empty()) << report.warnings.front();
}

// What a ring buffer can leave: completions whose call or start is gone, a leave whose enter is
// gone, regions never closed; and receives from MPI_PROC_NULL, which have no message.
TEST_F(RankRecordsTest, LeftoversOfARingBufferAreLeftOutAndTheLocationStillNests) {
  std::deque<test_rank> ranks;
  ranks.emplace_back(1);
  test_rank& k = ranks[0];
  k.context.region_names = {"outer", "lost"};
  k.add(record_kind::send_complete, 0, 5, 5).request = 9; // no call before it
  k.add(record_kind::region_leave, 1, 6, 6);              // its enter is gone
  k.add(record_kind::region_enter, 0, 10, 10);
  record& proc_null = k.call(irecv, 20, 30);
  proc_null.peer = STRATA_PROC_NULL_RANK;
  proc_null.request = 4;
  k.call(waitall, 40, 50);
  k.add(record_kind::recv_complete, 0, 50, 50).request = 4; // its Irecv made no request record
  k.add(record_kind::send_complete, 0, 50, 50).request = 9; // its Isend is not in the archive
  const std::vector<rank_figures> figures = write_job(trace(), ranks);
  const auto lines = read_back();
  EXPECT_EQ(lines[0], (std::vector<std::string>{"10 enter outer", "20 enter MPI_Irecv",
                                                "30 leave MPI_Irecv", "40 enter MPI_Waitall",
                                                "50 leave MPI_Waitall", "50 leave outer"}));
  EXPECT_EQ(figures[0].events, 6u);
}

TEST(RankRecords, CollectLocalNamesWhatTheRecordsUseInFirstUseOrder) {
  test_rank k(2);
  k.context.region_names = {"a", "b"};
  k.call(allreduce, 1, 2, 0x100 * 4);
  k.call(isend, 3, 4, 0x100 * 4 + 1); // another address on the same line: one site
  k.call(allreduce, 5, 6, 0x999);     // in no known binary: no site
  k.call(irecv, 7, 8, 0x100 * 2);
  k.call(irecv, 9, 10, 0xaaa); // a stripped binary: its name and offset, line 0
  const local_index li = collect_local(k.records, k.context);
  EXPECT_EQ(li.defs.host, "node-a");
  EXPECT_EQ(li.defs.mpi_regions,
            (std::vector<std::string>{"MPI_Allreduce", "MPI_Isend", "MPI_Irecv"}));
  EXPECT_EQ(li.mpi_region_of_fid[allreduce], 0);
  EXPECT_EQ(li.mpi_region_of_fid[send], -1);
  EXPECT_EQ(li.defs.user_regions, k.context.region_names);
  ASSERT_EQ(li.defs.sites.size(), 3u);
  EXPECT_EQ(li.defs.sites[0], (source_site{"app.c", 4}));
  EXPECT_EQ(li.defs.sites[2], (source_site{"app+0xaaa", 0}));
  EXPECT_EQ(li.site_of_address.at(0x100 * 4 + 1), 0);
  EXPECT_EQ(li.site_of_address.at(0x999), -1);
  EXPECT_EQ(li.site_of_address.at(0x100 * 2), 1);
  EXPECT_EQ(li.site_of_address.at(0xaaa), 2);
  EXPECT_EQ(li.defs.comms, (std::vector<std::vector<int>>{{0, 1}}));
}

TEST(JobDefinitions, TheWorldByItsMembersRolesAndTheClock) {
  global_defs g;
  g.hosts = {"h0", "h1"};
  g.rank_host = {0, 1, 1};
  g.mpi_regions = {"MPI_Bcast", "MPI_Send", "MPI_Comm_rank"};
  g.user_regions = {"solver"};
  g.comms = {{0, 1, 2}, {0, 1, 2}, {2, 0}};
  std::vector<rank_figures> ranks(3);
  ranks[0] = {10, 0, 500, 900, 0, 0};
  ranks[1] = {0, 0, 0, 0, 0, 0}; // no events: does not count for the clock
  ranks[2] = {7, 3, 400, 1000, -5, 6};
  const archive_definitions d = describe_job(g, ranks, {450, 440, 10'000}, limit_policy::stop);
  EXPECT_EQ(d.first_time, 400u);
  EXPECT_EQ(d.length, 601u);
  EXPECT_EQ(d.realtime_ns, 10'000u - 40u);
  ASSERT_EQ(d.comms.size(), 3u);
  EXPECT_EQ(d.comms[0].name, "MPI_COMM_WORLD");
  EXPECT_EQ(d.comms[1].name, "comm 1"); // a duplicate of the world
  EXPECT_EQ(d.comms[2].name, "comm 2");
  EXPECT_EQ(d.comms[2].world_ranks, (std::vector<uint64_t>{2, 0}));
  ASSERT_EQ(d.regions.size(), 4u);
  EXPECT_EQ(d.regions[0].role, OTF2_REGION_ROLE_COLL_ONE2ALL);
  EXPECT_EQ(d.regions[1].role, OTF2_REGION_ROLE_POINT2POINT);
  EXPECT_EQ(d.regions[2].role, OTF2_REGION_ROLE_FUNCTION);
  EXPECT_EQ(d.regions[2].paradigm, OTF2_PARADIGM_MPI);
  EXPECT_EQ(d.regions[3].paradigm, OTF2_PARADIGM_USER);
  EXPECT_EQ(d.ranks[2].host, 1u);
  EXPECT_EQ(d.ranks[2].dropped, 3u);
  EXPECT_EQ(d.ranks[2].offset_init_ns, -5);
  // Dropped at the limit: the stop policy after the last event written, ring before the first.
  EXPECT_EQ(d.ranks[2].dropped_after, 1000u);
  EXPECT_EQ(d.ranks[2].dropped_before, 0u);
  EXPECT_EQ(d.ranks[0].dropped_after, 0u);
  const archive_definitions ring = describe_job(g, ranks, {450, 440, 10'000}, limit_policy::ring);
  EXPECT_EQ(ring.ranks[2].dropped_before, 400u);
  EXPECT_EQ(ring.ranks[2].dropped_after, 0u);
  const archive_definitions empty =
      describe_job(g, std::vector<rank_figures>(3), {450, 440, 0}, limit_policy::stop);
  EXPECT_EQ(empty.first_time, 450u); // no events: MPI_Init
  EXPECT_EQ(empty.length, 1u);
}

TEST_F(RankRecordsTest, PrepareReplacesOnlyAnEarlierArchive) {
  {
    std::deque<test_rank> ranks;
    ranks.emplace_back(1);
    ranks[0].call(comm_rank, 1, 2);
    write_job(trace(), ranks);
  }
  std::ofstream(fs::path(trace()) / "notes.txt") << "mine";
  EXPECT_EQ(prepare_archive_directory(trace()), "");
  EXPECT_FALSE(fs::exists(fs::path(trace()) / "traces.otf2"));
  EXPECT_FALSE(fs::exists(fs::path(trace()) / "traces"));
  EXPECT_TRUE(fs::exists(fs::path(trace()) / "notes.txt"));
  std::ofstream(dir_ / "plain") << "a file";
  EXPECT_NE(prepare_archive_directory((dir_ / "plain" / "sub").string()).find("cannot create"),
            std::string::npos);
}

TEST_F(RankRecordsTest, AWriterThatCannotWriteItsArchiveSaysWhy) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "plain") << "a file";
  archive_writer archive((dir_ / "plain" / "trace").string());
  // OTF2 creates its files lazily: some step fails, and the first failure is kept.
  archive.use_serial_collectives();
  archive.open_event_files();
  archive.location(0).enter(1, 0);
  archive.location(0).leave(2, 0);
  archive.close_event_files();
  archive.write_local_definitions({{0, {}}});
  archive.write_global_definitions({});
  ::testing::internal::CaptureStderr();
  archive.close();
  // OTF2 printed nothing of its own: the caller says it, once.
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_FALSE(archive.error().empty());
  EXPECT_EQ(archive.error().find('\n'), std::string::npos) << archive.error();
}

TEST_F(RankRecordsTest, DropsAndCountedCallsReachEveryReader) {
  std::deque<test_rank> ranks;
  ranks.emplace_back(2);
  ranks.emplace_back(2);
  for (test_rank& k : ranks) {
    k.call(init, 1'000'000'000, 1'100'000'000);
    k.call(allreduce, 2'000'000'000, 2'500'000'000);
  }
  write_job(trace(), ranks);
  // What rank 0's finalize adds to the job's definitions: rank 1 dropped events after its last
  // one kept, both counted their clock readings.
  {
    const analyze::definitions defs = analyze::trace_reader(trace()).defs();
    EXPECT_TRUE(defs.notes.drops.empty());
    EXPECT_EQ(analyze::truncation_line(defs.notes, defs.global_offset, defs.timer_resolution), "");
  }
  archive_definitions d;
  d.first_time = 1'000'000'000;
  d.length = 1'500'000'001;
  d.hosts = {"node-a"};
  d.ranks.resize(2);
  d.ranks[0].counted_calls = {{"MPI_Comm_rank", 3}, {"MPI_Wtime", 8'000'000}};
  d.ranks[1].counted_calls = {{"MPI_Wtime", 7}};
  d.ranks[1].dropped = 1234;
  d.ranks[1].dropped_after = 2'500'000'000;
  fs::remove_all(trace());
  archive_writer archive(trace());
  archive.use_serial_collectives();
  archive.open_event_files();
  archive.close_event_files();
  archive.write_local_definitions({{0, {}}, {1, {}}});
  EXPECT_EQ(archive.write_global_definitions(d), OTF2_SUCCESS) << archive.error();
  EXPECT_EQ(archive.close(), OTF2_SUCCESS) << archive.error();
  const analyze::definitions defs = analyze::trace_reader(trace()).defs();
  ASSERT_EQ(defs.notes.drops.size(), 1u);
  EXPECT_EQ(defs.notes.drops[0].rank, 1u);
  EXPECT_EQ(defs.notes.drops[0].events, 1234u);
  EXPECT_EQ(defs.notes.drops[0].after, 2'500'000'000u);
  EXPECT_EQ(defs.notes.drops[0].before, 0u);
  ASSERT_EQ(defs.notes.counted.size(), 3u);
  EXPECT_EQ(defs.notes.counted[1].rank, 0u);
  EXPECT_EQ(defs.notes.counted[1].routine, "MPI_Wtime");
  EXPECT_EQ(defs.notes.counted[1].calls, 8'000'000u);
  EXPECT_EQ(defs.notes.counted[2].rank, 1u);
  EXPECT_EQ(analyze::truncation_line(defs.notes, defs.global_offset, defs.timer_resolution),
            "the trace is truncated: 1234 events were dropped at the tracer's size limit (rank 1: "
            "1234 after 1.500 s); what they held is missing here");
}

} // namespace
} // namespace strata::trace
