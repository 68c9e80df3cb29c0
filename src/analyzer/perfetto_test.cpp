// The communication matrix of the analysis and the Perfetto export, on archives with known
// content: pairs per kind in world ranks, the export's slices, flows and wait states, its
// selection, and its option parsing.
#include "analyzer/analysis.hpp"
#include "analyzer/perfetto_export.hpp"
#include "analyzer/render.hpp"
#include "analyzer/trace_builder.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <otf2/otf2.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

namespace fs = std::filesystem;
using namespace strata::analyze;

namespace {

class PerfettoTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("strata_perfetto_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string trace() const { return (dir_ / "trace").string(); }
  std::string out() const { return (dir_ / "out.json").string(); }

  // Rank 0 -> 1 blocking send (late sender at rank 1), a Sendrecv between 1 and 2, and a send on
  // a communicator of ranks {2, 0} from its rank 0 (world 2) to its rank 1 (world 0), and an
  // Allreduce where rank 2 arrives last.
  void write_pattern() {
    trace_builder b(trace(), 3);
    const uint32_t sendrecv = b.mpi("MPI_Sendrecv");
    const uint32_t send = b.mpi("MPI_Send");
    const uint32_t recv = b.mpi("MPI_Recv");
    const uint32_t pair = b.comm("pair", {2, 0});
    b.mpi_recv(1, 100, 900, 0, 5, 64);
    b.mpi_send(0, 800, 850, 1, 5, 64);
    for (uint32_t r : {1U, 2U}) {
      b.enter(r, 1000, sendrecv);
      b.send(r, 1000, 3 - r, trace_builder::world, 6, 100 + r);
      b.recv(r, 1100, 3 - r, trace_builder::world, 6, 100 + (3 - r));
      b.leave(r, 1100, sendrecv);
    }
    b.enter(2, 1200, send);
    b.send(2, 1200, 1, pair, 7, 4096);
    b.leave(2, 1300, send);
    b.enter(0, 1150, recv);
    b.recv(0, 1400, 0, pair, 7, 4096);
    b.leave(0, 1400, recv);
    for (uint32_t r = 0; r < 3; ++r)
      b.mpi_collective(r, "MPI_Allreduce", OTF2_COLLECTIVE_OP_ALLREDUCE, 2000 + 500 * r, 3500);
  }

  nlohmann::json exported(const perfetto_selection& selection = {}) {
    const perfetto_result r = export_perfetto(trace(), out(), selection);
    EXPECT_EQ(r.file, out());
    EXPECT_FALSE(fs::exists(out() + ".partial"));
    std::ifstream in(out());
    return nlohmann::json::parse(in);
  }

  fs::path dir_;
};

std::vector<nlohmann::json> of_phase(const nlohmann::json& doc, const std::string& phase) {
  std::vector<nlohmann::json> out;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == phase)
      out.push_back(e);
  return out;
}

TEST_F(PerfettoTest, PairsAreTheMessagesSentInWorldRanksPerKind) {
  write_pattern();
  const report r = analyze_trace(trace());
  std::map<std::tuple<uint32_t, uint32_t, std::string>, std::pair<uint64_t, uint64_t>> pairs;
  for (const message_pair& p : r.pairs)
    pairs[{p.from, p.to, p.kind}] = {p.messages, p.bytes};
  const decltype(pairs) expected = {{{0, 1, "point_to_point"}, {1, 64}},
                                    {{1, 2, "sendrecv"}, {1, 101}},
                                    {{2, 1, "sendrecv"}, {1, 102}},
                                    {{2, 0, "point_to_point"}, {1, 4096}}};
  EXPECT_EQ(pairs, expected);
  const nlohmann::json j = nlohmann::json::parse(render_json(r));
  EXPECT_EQ(j["communication"]["pairs"],
            nlohmann::json::parse(R"([{"from":0,"to":1,"messages":1,"bytes":64},
                                      {"from":1,"to":2,"messages":1,"bytes":101},
                                      {"from":2,"to":0,"messages":1,"bytes":4096},
                                      {"from":2,"to":1,"messages":1,"bytes":102}])"));
  EXPECT_EQ(j["communication"]["by_kind"]["sendrecv"].size(), 2U);
  EXPECT_NE(render_csv(r).find("\npairs,2,0,point_to_point,1,4096\n"), std::string::npos);
  const std::string text = render_text(r);
  const size_t table = text.find("Point-to-point messages between ranks, heaviest first\n");
  ASSERT_NE(table, std::string::npos) << text;
  const size_t heaviest = text.find("       2        0            1             4096\n", table);
  const size_t lightest = text.find("       0        1            1               64\n", table);
  EXPECT_NE(lightest, std::string::npos) << text;
  EXPECT_LT(heaviest, lightest) << text;
}

TEST_F(PerfettoTest, SlicesFlowsAndWaitStatesOfTheWholeTrace) {
  write_pattern();
  const nlohmann::json doc = exported();
  const auto slices = of_phase(doc, "X");
  size_t calls = 0;
  for (const auto& s : slices)
    calls += s["cat"] == "mpi";
  EXPECT_EQ(calls, 2U + 2 + 2 + 3); // send/recv, sendrecv x2, send/recv on "pair", allreduce x3
  EXPECT_EQ(of_phase(doc, "s").size(), 4U);
  EXPECT_EQ(of_phase(doc, "f").size(), 4U);
  // The late sender at rank 1 (pid 2): from its enter, 700 ns, after every operation's slice.
  size_t first_wait = SIZE_MAX, last_call = 0;
  bool late = false;
  for (size_t i = 0; i < doc["traceEvents"].size(); ++i) {
    const auto& e = doc["traceEvents"][i];
    if (e["ph"] != "X")
      continue;
    if (e["cat"] == "wait_state") {
      first_wait = std::min(first_wait, i);
      if (e["name"] == "late_sender" && e["pid"] == 2) {
        late = true;
        EXPECT_NEAR(e["dur"].get<double>(), 0.7, 1e-9);
      }
    } else {
      last_call = i;
    }
  }
  EXPECT_TRUE(late);
  EXPECT_LT(last_call, first_wait);
  // The send on "pair" names its peer as a world rank, the communicator by name.
  bool found = false;
  for (const auto& s : slices)
    if (s["pid"] == 3 && s["name"] == "MPI_Send") {
      EXPECT_EQ(s["args"]["sent"],
                nlohmann::json::parse(R"([{"to":0,"tag":7,"bytes":4096,"comm":"pair"}])"));
      found = true;
    }
  EXPECT_TRUE(found);
}

TEST_F(PerfettoTest, SelectionKeepsRanksAndOperationsOverlappingTheWindow) {
  write_pattern();
  perfetto_selection s;
  s.first_rank = 1;
  s.last_rank = 2;
  s.from_s = 1050e-9;
  s.to_s = 1250e-9;
  const nlohmann::json doc = exported(s);
  std::multiset<std::pair<int, std::string>> kept;
  for (const auto& e : of_phase(doc, "X"))
    if (e["cat"] == "mpi")
      kept.insert({e["pid"].get<int>(), e["name"].get<std::string>()});
  const std::multiset<std::pair<int, std::string>> expected = {
      {2, "MPI_Sendrecv"}, {3, "MPI_Sendrecv"}, {3, "MPI_Send"}};
  EXPECT_EQ(kept, expected);
  EXPECT_EQ(of_phase(doc, "s").size(), 2U); // the Sendrecv's two messages; not 2 -> 0
  EXPECT_EQ(of_phase(doc, "M").size(), 6U);
}

TEST_F(PerfettoTest, RankRangesAndSelectionsOutsideTheTraceAreRefused) {
  perfetto_selection s;
  parse_rank_range("3-7", s);
  EXPECT_EQ(std::make_pair(s.first_rank, s.last_rank), std::make_pair(3U, 7U));
  parse_rank_range("4", s);
  EXPECT_EQ(std::make_pair(s.first_rank, s.last_rank), std::make_pair(4U, 4U));
  for (const char* bad : {"", "-", "a-b", "3-", "-3", "7-3", "1-2-3", "99999999999", " 1"})
    EXPECT_THROW(parse_rank_range(bad, s), std::invalid_argument) << bad;
  write_pattern();
  s = {};
  s.last_rank = 3;
  EXPECT_THROW(export_perfetto(trace(), out(), s), trace_error);
  EXPECT_FALSE(fs::exists(out()));
  EXPECT_FALSE(fs::exists(out() + ".partial"));
}

TEST_F(PerfettoTest, AnUnwritableOutputIsOneErrorAndNoFile) {
  write_pattern();
  const std::string nowhere = (dir_ / "missing" / "out.json").string();
  try {
    export_perfetto(trace(), nowhere, {});
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(nowhere + ".partial: cannot write"), std::string::npos)
        << e.what();
  }
}

} // namespace
