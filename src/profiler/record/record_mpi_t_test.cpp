// The record's "mpi_t" section: written and read back exactly by both readers, its ranks
// checked, and shown by the report.
#include "profiler/record/record.hpp"
#include "profiler/record/record_fast.hpp"
#include "profiler/record/render.hpp"
#include "profiler/record/render_mpi_t.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using namespace strata::record;
using json = nlohmann::json;

job_record with_mpi_t() {
  job_record record;
  record.job.id = "local:variables";
  record.job.ranks = 4;
  record.job.ranks_reported = 4;
  mpi_t_section& t = record.mpi_t.emplace();
  t.pvars_exposed = 46;
  t.cvars_exposed = 3;
  mpi_t_pvar queue;
  queue.name = "pml_ob1_unexpected_msgq_length";
  queue.description = "Number of unexpected messages received by each peer in a communicator";
  queue.var_class = "size";
  queue.binding = "communicator";
  queue.datatype = "unsigned";
  queue.elements = 4;
  queue.ranks = 4;
  queue.sum = {std::uint64_t{12}};
  queue.min = {std::uint64_t{0}};
  queue.max = {std::uint64_t{12}};
  queue.min_rank = 0;
  queue.max_rank = 1;
  mpi_t_pvar big = queue;
  big.name = "bytes";
  big.var_class = "counter";
  big.sum = {std::uint64_t{18446744073709551615ULL}}; // beyond doubles and int64
  big.min = {std::int64_t{-3}};
  big.max = {2.5};
  mpi_t_pvar window = queue;
  window.name = "osc_rdma_put_retry_count";
  window.binding = "window";
  window.ranks = 0;
  window.unread = "bound to a window, of which the profile holds none";
  t.pvars = {queue, big, window};
  t.cvars = {{"btl_vader_eager_limit", "4096"}, {"coll_tuned_use_dynamic_rules", "false"}};
  t.cvars_set = {"btl_vader_eager_limit"};
  return record;
}

void expect_both_readers_give(const std::string& text, const job_record& expected) {
  const auto reference = parse_record(text);
  ASSERT_TRUE(reference.ok()) << reference.error;
  EXPECT_EQ(*reference.record, expected);
  const auto fast = parse_record_fast(text);
  ASSERT_TRUE(fast.ok()) << fast.error;
  EXPECT_EQ(*fast.record, expected);
}

TEST(RecordMpiT, RoundTripsExactlyThroughBothReaders) {
  const job_record record = with_mpi_t();
  const std::string text = to_json(record);
  expect_both_readers_give(text, record);
  EXPECT_NE(text.find("18446744073709551615"), std::string::npos);
  EXPECT_EQ(to_json(*parse_record(text).record), text);
  // A double that happens to be integral stays a double.
  job_record integral = record;
  integral.mpi_t->pvars[1].max = {3.0};
  expect_both_readers_give(to_json(integral), integral);
}

// `doc` as JSON text with every object's keys in reverse name order (writers put them in name
// order, which the simdjson reader walks alongside its structs' keys).
std::string dump_reversed(const json& doc) {
  if (doc.is_array()) {
    std::string out = "[";
    for (const json& item : doc)
      out += (out.size() > 1 ? "," : "") + dump_reversed(item);
    return out + "]";
  }
  if (!doc.is_object())
    return doc.dump();
  std::string out = "{";
  for (auto it = doc.crbegin(); it != doc.crend(); ++it)
    out += (out.size() > 1 ? "," : "") + json(it.key()).dump() + ":" + dump_reversed(it.value());
  return out + "}";
}

// Both readers, and the simdjson one itself (parse_record_fast falls back to the reference).
void expect_all_readers_give(const std::string& text, const job_record& expected) {
  expect_both_readers_give(text, expected);
  const auto simd = read_record_simdjson(text);
  ASSERT_TRUE(simd.has_value()) << text;
  EXPECT_EQ(*simd, expected);
}

TEST(RecordMpiT, BothReadersAgreeWhateverTheOrderOfKeys) {
  const job_record record = with_mpi_t();
  const std::string text = json::parse(to_json(record)).dump(); // compact, in name order
  const std::string reversed = dump_reversed(json::parse(text));
  ASSERT_NE(reversed, text);
  expect_all_readers_give(reversed, record);
  // A key repeated inside a struct of an array (the first pvar's sum): the last one counts,
  // in either order.
  const std::string sum = "\"sum\":12";
  for (const std::string& from : {text, reversed}) {
    std::string twice = from;
    ASSERT_NE(twice.find(sum), std::string::npos);
    twice.replace(twice.find(sum), 0, "\"sum\":7,");
    expect_all_readers_give(twice, record);
    twice = from;
    twice.replace(twice.find(sum) + sum.size(), 0, ",\"sum\":7");
    job_record seven = record;
    seven.mpi_t->pvars[0].sum = {std::uint64_t{7}};
    expect_all_readers_give(twice, seven);
  }
  // A required key missing from the second element: the same message from both readers.
  json missing = json::parse(text);
  missing["mpi_t"]["pvars"][1].erase("class");
  for (const std::string& broken : {missing.dump(), dump_reversed(missing)}) {
    const auto reference = parse_record(broken);
    ASSERT_FALSE(reference.ok());
    EXPECT_EQ(reference.error, "mpi_t.pvars[1].class is missing");
    EXPECT_EQ(parse_record_fast(broken).error, reference.error);
    EXPECT_FALSE(read_record_simdjson(broken).has_value());
  }
}

TEST(RecordMpiT, SaysWhyNothingWasReadAndReadsRecordsWithoutIt) {
  job_record record = with_mpi_t();
  record.mpi_t->pvars.clear();
  record.mpi_t->not_read = "not read: the job ran 0.4 s, under the 250 s";
  std::string text = to_json(record);
  EXPECT_NE(text.find("\"not_read\""), std::string::npos);
  expect_all_readers_give(text, record);
  expect_all_readers_give(dump_reversed(json::parse(text)), record);
  // MPI_T never started: how many variables the library exposes is not known, and left out.
  record.mpi_t->pvars_exposed.reset();
  record.mpi_t->cvars_exposed.reset();
  record.mpi_t->events_exposed.reset();
  text = to_json(record);
  EXPECT_EQ(text.find("_exposed"), std::string::npos);
  expect_all_readers_give(text, record);
  EXPECT_EQ(to_json(with_mpi_t()).find("not_read"), std::string::npos);
}

TEST(RecordMpiT, AbsentWhenNotRead) {
  job_record record = with_mpi_t();
  record.mpi_t.reset();
  const std::string text = to_json(record);
  EXPECT_EQ(text.find("\"mpi_t\""), std::string::npos) << text;
  expect_both_readers_give(text, record);
}

TEST(RecordMpiT, RefusesMalformedSections) {
  const std::string text = to_json(with_mpi_t());
  const auto refuse = [&](auto change) {
    json doc = json::parse(text);
    change(doc);
    const auto parsed = parse_record(doc.dump());
    EXPECT_FALSE(parsed.ok());
    const auto fast = parse_record_fast(doc.dump());
    EXPECT_EQ(fast.error, parsed.error);
    EXPECT_EQ(parse_record_lean(doc.dump()).parsed.error, parsed.error);
    return parsed.error;
  };
  EXPECT_EQ(refuse([](json& doc) { doc["mpi_t"]["pvars"][0]["sum"] = "many"; }),
            "mpi_t.pvars[0].sum: expected a number, got \"many\"");
  EXPECT_EQ(refuse([](json& doc) { doc["mpi_t"]["pvars"][0].erase("class"); }),
            "mpi_t.pvars[0].class is missing");
  EXPECT_EQ(refuse([](json& doc) { doc["mpi_t"]["pvars"][0]["max_rank"] = 4; }),
            "mpi_t.pvars (pml_ob1_unexpected_msgq_length): ranks 4, min_rank 0, max_rank 4 do "
            "not fit job.ranks (4)");
  EXPECT_EQ(refuse([](json& doc) { doc["mpi_t"]["cvars"]["x"] = 1; }),
            "mpi_t.cvars.x: expected a string, got 1");
}

// The site ingest's read: the record but for its control variables, which come as views in
// name order, from simdjson or, for what simdjson's path refuses, from parse_record's map.
void expect_lean_read_gives(const std::string& text, const job_record& expected) {
  const lean_parse_result lean = parse_record_lean(text);
  ASSERT_TRUE(lean.parsed.ok()) << lean.parsed.error;
  std::vector<cvar_view> want(expected.mpi_t->cvars.begin(), expected.mpi_t->cvars.end());
  EXPECT_EQ(lean.cvars, want);
  job_record record = *lean.parsed.record;
  record.mpi_t->cvars = expected.mpi_t->cvars;
  EXPECT_EQ(record, expected);
}

TEST(RecordMpiT, LeanReadGivesControlVariablesAsViewsInNameOrder) {
  const job_record record = with_mpi_t();
  const std::string text = to_json(record);
  expect_lean_read_gives(text, record);
  std::vector<cvar_view> views;
  const auto simd = read_record_simdjson_lean(text, views);
  ASSERT_TRUE(simd.has_value());
  EXPECT_TRUE(simd->mpi_t->cvars.empty()); // not copied
  EXPECT_EQ(views.size(), 2u);
  // Out of name order (a writer other than ours): simdjson's path declines, the reference
  // reader's map gives them in order.
  const std::string compact = nlohmann::ordered_json::parse(text).dump();
  const std::string swapped = [&] {
    nlohmann::ordered_json doc = nlohmann::ordered_json::parse(text);
    nlohmann::ordered_json reversed = nlohmann::ordered_json::object();
    reversed["coll_tuned_use_dynamic_rules"] = "false";
    reversed["btl_vader_eager_limit"] = "4096";
    doc["mpi_t"]["cvars"] = reversed;
    return doc.dump();
  }();
  ASSERT_NE(swapped, compact);
  EXPECT_FALSE(read_record_simdjson_lean(swapped, views).has_value());
  EXPECT_TRUE(views.empty());
  expect_lean_read_gives(swapped, record);
  // A repeated name: what the reference reader makes of it (nlohmann keeps the last).
  std::string twice = compact;
  twice.insert(twice.find(R"("coll_tuned)"), R"("btl_vader_eager_limit":"1",)");
  const auto reference = parse_record(twice);
  ASSERT_TRUE(reference.ok()) << reference.error;
  EXPECT_EQ(reference.record->mpi_t->cvars.at("btl_vader_eager_limit"), "1");
  expect_lean_read_gives(twice, *reference.record);
  // Without a section, no views.
  job_record without = record;
  without.mpi_t.reset();
  const lean_parse_result none = parse_record_lean(to_json(without));
  ASSERT_TRUE(none.parsed.ok());
  EXPECT_TRUE(none.cvars.empty());
  EXPECT_EQ(*none.parsed.record, without);
}

TEST(RecordMpiT, ReportShowsVariablesWithDescriptionsAndWhatWasNotRead) {
  const std::string text = render(with_mpi_t(), report_format::text);
  EXPECT_NE(text.find("MPI library variables (MPI_T)"), std::string::npos) << text;
  EXPECT_NE(text.find("pml_ob1_unexpected_msgq_length"), std::string::npos);
  EXPECT_NE(text.find("Number of unexpected messages received by each peer"), std::string::npos);
  EXPECT_NE(text.find("18446744073709551615"), std::string::npos);
  EXPECT_NE(text.find("bound to a window, of which the profile holds none"), std::string::npos);
  EXPECT_NE(text.find("btl_vader_eager_limit"), std::string::npos);
  EXPECT_NE(text.find("2 control variables and their values are in the record"), std::string::npos);
  EXPECT_NE(text.find("none (no MPI_T events before MPI 4.0)"), std::string::npos);
  const std::string html = render(with_mpi_t(), report_format::html);
  EXPECT_NE(html.find("<td>pml_ob1_unexpected_msgq_length</td>"), std::string::npos);
}

TEST(RecordMpiT, ALibraryThatExposesNothingSaysSo) {
  mpi_t_section empty;
  empty.pvars_exposed = 0;
  empty.cvars_exposed = 344;
  empty.events_exposed = 0;
  const auto tables = mpi_t_tables(empty);
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].note, "the MPI library exposes no performance variables");
  EXPECT_EQ(tables[0].rows[2][1], "0");
  mpi_t_section failed;
  failed.problem = "MPI_T_init_thread failed (error 16)";
  EXPECT_EQ(mpi_t_tables(failed)[0].note, "MPI_T_init_thread failed (error 16)");
  mpi_t_section short_job;
  short_job.not_read = "not read: the job ran 0.4 s, under the 250 s";
  EXPECT_EQ(mpi_t_tables(short_job)[0].note, *short_job.not_read);
  const std::vector<std::string> unknown = {"variables exposed",
                                            "not known: MPI_T was not started"};
  EXPECT_EQ(mpi_t_tables(short_job)[0].rows, std::vector<std::vector<std::string>>{unknown});
  EXPECT_EQ(pvar_text({-2.5}), "-2.5");
  EXPECT_EQ(pvar_text({std::int64_t{-7}}), "-7");
}

} // namespace
