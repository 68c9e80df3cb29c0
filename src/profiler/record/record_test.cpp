#include "profiler/record/record.hpp"
#include "profiler/record/record_fast.hpp"
#include "profiler/record/render.hpp"
#include "profiler/record/render_communication.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace {

using namespace strata::record;
using json = nlohmann::json;

std::string sample_text() {
  std::ifstream in(STRATA_RECORD_TESTDATA "/sample.json", std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

job_record sample() {
  auto parsed = parse_record(sample_text());
  EXPECT_TRUE(parsed.ok()) << parsed.error;
  return parsed.ok() ? *parsed.record : job_record{};
}

// The sample with one change applied, as JSON text.
template <typename Change> std::string modified(Change change) {
  json doc = json::parse(sample_text());
  change(doc);
  return doc.dump();
}

std::string error_of(const std::string& text) {
  const auto parsed = parse_record(text);
  EXPECT_FALSE(parsed.ok());
  // The bulk reader of site ingest refuses the same text with the same message.
  const auto fast = parse_record_fast(text);
  EXPECT_FALSE(fast.ok());
  EXPECT_EQ(fast.error, parsed.error);
  return parsed.error;
}

const routine& find(const job_record& record, const std::string& name) {
  const auto it = std::find_if(record.routines.begin(), record.routines.end(),
                               [&](const routine& r) { return r.name == name; });
  EXPECT_NE(it, record.routines.end()) << name;
  return *it;
}

// The routine-table line of a routine: the one that names it and shows its imbalance rank.
std::string table_line(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.find("  " + name + " ") != std::string::npos &&
        line.find("(rank") != std::string::npos)
      return line;
  ADD_FAILURE() << "no table line for " << name << " in\n" << text;
  return "";
}

const std::vector<std::string> routines_by_time = {"MPI_Wait",  "MPI_Allreduce", "MPI_Barrier",
                                                   "MPI_Send",  "MPI_Recv",      "MPI_Bcast",
                                                   "MPI_Isend", "MPI_Irecv",     "MPI_Comm_rank"};

void expect_in_order(const std::string& text, const std::vector<std::string>& needles) {
  size_t previous = 0;
  for (const auto& needle : needles) {
    const size_t at = text.find(needle, previous);
    ASSERT_NE(at, std::string::npos) << needle << " missing or out of order in\n" << text;
    previous = at + needle.size();
  }
}

strata::model::machine_model send_model() {
  strata::model::machine_model model;
  model.routines["MPI_Send"] = {1.5e-6, 5e9};
  return model;
}

TEST(ParseRecord, ReadsEveryPartOfTheSample) {
  const job_record record = sample();
  EXPECT_EQ(record.job.id, "slurm:81234");
  EXPECT_EQ(record.job.ranks, 4u);
  EXPECT_EQ(record.job.host_names, (std::vector<std::string>{"node17", "node18"}));
  EXPECT_EQ(record.job.argv.at(2), "<script>alert(1)</script>");
  EXPECT_EQ(record.job.environment.at("OMPI_MCA_btl"), "self,vader,tcp");
  EXPECT_EQ(record.job.status, job_status::finalized);
  EXPECT_FALSE(record.job.abort_code.has_value());
  EXPECT_DOUBLE_EQ(record.job.mpi_percent_by_rank.max, 14.6);
  EXPECT_EQ(record.job.mpi_percent_by_rank.min_rank, 2u);
  EXPECT_EQ(record.job.counters.at("task-clock").in_mpi, 6110008000u);
  ASSERT_EQ(record.routines.size(), 9u);
  const routine& send = find(record, "MPI_Send");
  EXPECT_EQ(send.calls, 4000u);
  EXPECT_DOUBLE_EQ(send.time_s, 0.81);
  EXPECT_EQ(send.size_histogram, (std::vector<histogram_bin>{{0, 10}, {256, 3990}}));
  EXPECT_EQ(send.per_rank.time_s.max_rank, 3u);
  EXPECT_EQ(find(record, "MPI_Allreduce").comm_size_histogram,
            (std::vector<histogram_bin>{{4, 800}}));
}

TEST(ParseRecord, RoundTripsThroughToJson) {
  const job_record record = sample();
  const std::string written = to_json(record);
  const auto again = parse_record(written);
  ASSERT_TRUE(again.ok()) << again.error;
  EXPECT_EQ(*again.record, record);
  EXPECT_EQ(to_json(*again.record), written);
}

TEST(ParseRecord, RoundTripsOptionalValues) {
  job_record record = sample();
  record.job.status = job_status::aborted;
  record.job.abort_code = -3;
  record.job.signal = 9;
  record.job.counters.clear();
  const auto again = parse_record(to_json(record));
  ASSERT_TRUE(again.ok()) << again.error;
  EXPECT_EQ(*again.record, record);
}

// strata recover's diagnosis of a hung job: its verdict and text read, the rest of strata
// hang's JSON left to the text; a section without its text refused by both readers alike.
TEST(ParseRecord, ReadsTheHangSectionsVerdictAndText) {
  const std::string text = modified([](json& doc) {
    doc["hang"] = {{"format", "strata.hang/1"},
                   {"verdict", "hang"},
                   {"deadlocks", json::array()},
                   {"text", "DEADLOCK: ranks 0-1 wait for each other"}};
  });
  const auto parsed = parse_record(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  ASSERT_TRUE(parsed.record->hang.has_value());
  EXPECT_EQ(parsed.record->hang->verdict, "hang");
  EXPECT_EQ(parsed.record->hang->text, "DEADLOCK: ranks 0-1 wait for each other");
  EXPECT_EQ(parse_record_fast(text).record, parsed.record);
  EXPECT_EQ(parse_record(to_json(*parsed.record)).record, parsed.record);
  EXPECT_FALSE(sample().hang.has_value());
  EXPECT_EQ(error_of(modified([](json& doc) {
              doc["hang"] = {{"verdict", "hang"}};
            })),
            "hang.text is missing");
}

// After the text report, line by line, each line as safe for a terminal as the report's own.
TEST(RenderText, EndsWithTheHangDiagnosis) {
  job_record record = sample();
  record.hang = hang_diagnosis{"hang", "DEADLOCK: ranks 0-1\n  rank 0 in \x1b[2JMPI_Recv\n"};
  const std::string text = render(record, report_format::text, nullptr);
  EXPECT_TRUE(text.ends_with("\nWhy the job hung (strata hang, from the ranks' last states):\n"
                             "DEADLOCK: ranks 0-1\n  rank 0 in \\x1b[2JMPI_Recv\n"))
      << text;
  EXPECT_EQ(render(record, report_format::html, nullptr).find("Why the job hung"),
            std::string::npos); // the web's job page shows it apart
}

TEST(ParseRecord, IgnoresUnknownKeysAndAcceptsAbsentOptionalOnes) {
  const auto parsed = parse_record(modified([](json& doc) {
    doc["job"]["future_field"] = {{"nested", true}};
    doc["routines"]["MPI_Send"]["future_figure"] = 1;
    doc["job"].erase("counters");
    doc["job"].erase("abort_code");
    doc["routines"]["MPI_Send"].erase("size_histogram");
  }));
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  EXPECT_TRUE(parsed.record->job.counters.empty());
  EXPECT_TRUE(find(*parsed.record, "MPI_Send").size_histogram.empty());
}

TEST(ParseRecord, NamesEachKindOfMalformedInput) {
  EXPECT_EQ(error_of(""), "not JSON: the text is empty");
  EXPECT_EQ(error_of("{\"schema\": x}"), "not JSON: syntax error at byte 12 (line 1, column 12)");
  EXPECT_EQ(error_of("{\n  \"a\": 1,\n  oops\n}"),
            "not JSON: syntax error at byte 15 (line 3, column 3)");
  const std::string text = sample_text();
  EXPECT_EQ(error_of(text.substr(0, 100)),
            "not JSON: the text ends early at byte 100 (truncated?)");
  EXPECT_EQ(error_of("[1, 2]"), "top level: expected an object, got [1,2]");
  EXPECT_EQ(error_of("{}"), "schema is missing (expected \"strata.job/1\")");
  EXPECT_EQ(error_of(modified([](json& doc) { doc["schema"] = "strata.job/2"; })),
            "schema is \"strata.job/2\", this Strata reads strata.job/1");
  EXPECT_EQ(error_of(modified([](json& doc) { doc["routines"]["MPI_Send"].erase("calls"); })),
            "routines.MPI_Send.calls is missing");
  EXPECT_EQ(error_of(modified([](json& doc) { doc.erase("job"); })), "job is missing");
  EXPECT_EQ(error_of(modified([](json& doc) { doc["job"]["ranks"] = "four"; })),
            "job.ranks: expected a non-negative integer, got \"four\"");
  EXPECT_EQ(error_of(modified([](json& doc) { doc["job"]["ranks"] = 0; })),
            "job.ranks: expected a positive integer, got 0");
  EXPECT_EQ(error_of(modified([](json& doc) { doc["job"]["ranks_reported"] = 5; })),
            "job.ranks_reported: expected an integer from 1 to job.ranks (4), got 5");
  EXPECT_EQ(error_of(modified([](json& doc) { doc["routines"]["MPI_Recv"]["calls"] = -5; })),
            "routines.MPI_Recv.calls: expected a non-negative integer, got -5");
  EXPECT_EQ(error_of(modified([](json& doc) { doc["routines"]["MPI_Recv"]["calls"] = 4.5; })),
            "routines.MPI_Recv.calls: expected a non-negative integer, got 4.5");
  EXPECT_EQ(error_of(modified([](json& doc) { doc["routines"]["MPI_Wait"]["time_s"] = -1.0; })),
            "routines.MPI_Wait.time_s: expected a non-negative number, got -1.0");
  EXPECT_EQ(error_of(modified([](json& doc) {
              doc["routines"]["MPI_Send"]["size_histogram"] = {{0, 10, 3}};
            })),
            "routines.MPI_Send.size_histogram[0]: expected a [bin, calls] pair of non-negative "
            "integers, got [0,10,3]");
  EXPECT_EQ(error_of(modified([](json& doc) {
              doc["routines"]["MPI_Send"]["size_histogram"] = {0, 10};
            })),
            "routines.MPI_Send.size_histogram[0]: expected a [bin, calls] pair of non-negative "
            "integers, got 0");
  EXPECT_EQ(error_of(modified([](json& doc) {
              doc["routines"]["MPI_Send"]["size_histogram"] = {{300, 10}};
            })),
            "routines.MPI_Send.size_histogram[0][0]: expected a bin lower bound (0 or a power of "
            "2), got 300");
  EXPECT_EQ(error_of(modified([](json& doc) {
              doc["routines"]["MPI_Send"]["per_rank"]["time_s"]["max_rank"] = 4;
            })),
            "routines.MPI_Send.per_rank.time_s.max_rank: expected a rank below job.ranks (4), "
            "got 4");
  EXPECT_EQ(error_of(modified([](json& doc) {
              doc["routines"]["MPI_Allreduce"]["comm_size_histogram"] = {{4, 1}, {0, 5}};
            })),
            "routines.MPI_Allreduce.comm_size_histogram[1][0]: expected a communicator size (1 or "
            "more), got 0");
  EXPECT_EQ(error_of(modified([](json& doc) { doc["job"]["signal"] = -1; })),
            "job.signal: expected a positive signal number or null, got -1");
  EXPECT_EQ(error_of(modified([](json& doc) { doc["job"]["abort_code"] = "x"; })),
            "job.abort_code: expected an integer or null, got \"x\"");
  EXPECT_EQ(
      error_of(modified([](json& doc) { doc["routines"][""] = doc["routines"]["MPI_Send"]; })),
      "routines: a routine has an empty name");
  EXPECT_EQ(error_of(modified([](json& doc) { doc["job"]["status"] = "crashed"; })),
            "job.status: expected one of finalized, aborted, signal, exit, got \"crashed\"");
  EXPECT_EQ(error_of(modified([](json& doc) { doc["job"]["argv"][1] = 7; })),
            "job.argv[1]: expected a string, got 7");
  EXPECT_EQ(error_of(modified([](json& doc) { doc["job"]["environment"]["X\n"] = 1; })),
            "job.environment.X\\x0a: expected a string, got 1");
  EXPECT_EQ(error_of(modified([](json& doc) {
              doc["routines"]["MPI_Send"] = {1, 2};
            })),
            "routines.MPI_Send: expected an object, got [1,2]");
  EXPECT_EQ(error_of(modified([](json& doc) { doc["job"]["partial"] = "no"; })),
            "job.partial: expected true or false, got \"no\"");
  EXPECT_EQ(error_of(R"({"schema":"strata.job/1","job":{"wall_time_s":1e999}})"),
            "not JSON: a number is out of range");
}

// parse_record_fast (simdjson, for site ingest) must give parse_record's result on any text.
void expect_same_as_reference(const std::string& text) {
  const auto reference = parse_record(text);
  const auto fast = parse_record_fast(text);
  ASSERT_EQ(fast.ok(), reference.ok()) << text.substr(0, 200) << "\n" << reference.error;
  EXPECT_EQ(fast.error, reference.error);
  if (reference.ok()) {
    EXPECT_EQ(*fast.record, *reference.record);
  }
}

TEST(ParseRecordFast, AgreesWithTheReferenceReader) {
  const std::string text = sample_text();
  // The sample takes the simdjson path itself, not the fallback.
  ASSERT_TRUE(read_record_simdjson(text).has_value());
  expect_same_as_reference(text);
  expect_same_as_reference(to_json(sample()));
  // Numbers at the edges of the integer kinds, and integral doubles as counts.
  for (const char* value : {"0", "-0", "4e3", "18446744073709551615", "18446744073709551616",
                            "9223372036854775808", "-9223372036854775808", "1.5", "-0.0"}) {
    std::string changed = modified([](json& doc) { doc["job"]["abort_code"] = "@"; });
    changed.replace(changed.find("\"@\""), 3, value);
    expect_same_as_reference(changed);
    changed = modified([](json& doc) { doc["routines"]["MPI_Send"]["calls"] = "@"; });
    changed.replace(changed.find("\"@\""), 3, value);
    expect_same_as_reference(changed);
  }
  // Escapes (a lone surrogate included), repeated keys and unknown keys.
  std::string changed = modified([](json& doc) { doc["job"]["user"] = "\u00e9\t\"x\""; });
  expect_same_as_reference(changed);
  changed = modified([](json& doc) { doc["job"]["user"] = "@"; });
  changed.replace(changed.find("\"@\""), 3, "\"\\ud800\"");
  expect_same_as_reference(changed);
  changed = modified([](json& doc) { doc["job"]["user"] = "first"; });
  changed.replace(changed.find("\"user\""), 0, "\"user\":\"second\",");
  expect_same_as_reference(changed);
  changed = modified([](json& doc) { doc["job"]["environment"]["HOME"] = "/a"; });
  changed.replace(changed.find("\"HOME\""), 0, "\"HOME\":7,");
  expect_same_as_reference(changed);
  changed = modified([](json& doc) { doc["routines"]["MPI_Send"]["future"] = {{"x", {1, 2}}}; });
  expect_same_as_reference(changed);
  // Truncated at every length: the same message each time.
  for (size_t n = 0; n < text.size(); n += 97)
    expect_same_as_reference(text.substr(0, n));
}

TEST(ParseRecord, RefusesByteCountsThatWouldOverflowTheirSum) {
  EXPECT_EQ(error_of(modified([](json& doc) {
              doc["routines"]["MPI_Send"]["bytes_sent"] = UINT64_MAX;
              doc["routines"]["MPI_Send"]["bytes_received"] = 1;
            })),
            "routines.MPI_Send: bytes_sent + bytes_received exceeds 2^64 - 1");
}

TEST(SplitTime, PartsSumToTheMeasuredTime) {
  const job_record record = sample();
  const routine& send = find(record, "MPI_Send");
  const time_split split = split_time(send, {1.5e-6, 5e9});
  EXPECT_DOUBLE_EQ(split.latency_s, 4000 * 1.5e-6);
  EXPECT_DOUBLE_EQ(split.transfer_s, 1596000 / 5e9);
  EXPECT_DOUBLE_EQ(split.latency_s + split.transfer_s + split.sync_s, send.time_s);
  EXPECT_GT(split.sync_s, 0.8);
}

TEST(SplitTime, ClipsEstimatesLargerThanTheTime) {
  routine r;
  r.calls = 1000;
  r.time_s = 0.01;
  r.bytes_sent = 1000000000;
  // Latency alone (0.02 s) exceeds the time: nothing is left for transfer or waiting.
  time_split split = split_time(r, {2e-5, 1e9});
  EXPECT_DOUBLE_EQ(split.latency_s, 0.01);
  EXPECT_DOUBLE_EQ(split.transfer_s, 0);
  EXPECT_DOUBLE_EQ(split.sync_s, 0);
  // Latency fits (0.001 s), transfer (1 s) does not: it gets the rest.
  split = split_time(r, {1e-6, 1e9});
  EXPECT_DOUBLE_EQ(split.latency_s, 0.001);
  EXPECT_DOUBLE_EQ(split.transfer_s, 0.009);
  EXPECT_DOUBLE_EQ(split.sync_s, 0);
}

TEST(RenderText, HeadlineCountersRoutinesAndHistograms) {
  const std::string text = render(sample(), report_format::text, nullptr);
  expect_in_order(text, {"MPI time", "11.8 %", "min 9.4 % on rank 2", "max 14.6 % on rank 3",
                         "Wall time", "12.9 s", "4 on 2 hosts", "node17, node18", "finalized",
                         "alice (uid 1000)", "/home/alice/bin/stencil", "Open MPI v4.1.4"});
  EXPECT_NE(
      text.find(
          R"(./stencil --grid=512 '<script>alert(1)</script>' 'a&b' 'say "hi"' 'it'\''s, ok')"),
      std::string::npos);
  // 6110008000 ns in 6.110008 s of MPI time; 45529992000 ns in 4 x 12.91 - 6.110008 s outside.
  expect_in_order(text, {"Counters", "task-clock", "ns", "1 G/s", "1 G/s"});
  expect_in_order(text, routines_by_time);
  // 2.1 s over 16000 calls is 131.25 us; max rank time 0.95 over mean 0.525 is 1.81.
  expect_in_order(table_line(text, "MPI_Wait"),
                  {"16000", "2.10 s", "34.4", "131", "1.81 (rank 3)"});
  // 0.95 s over 40 calls; 0.52 / 0.2375 = 2.19.
  expect_in_order(table_line(text, "MPI_Barrier"), {"40", "950 ms", "23750", "2.19 (rank 2)"});
  // 6553600 bytes each way, 16384 per call.
  expect_in_order(table_line(text, "MPI_Allreduce"), {"800", "12.5 MiB", "16 KiB"});
  EXPECT_EQ(text.find("latency"), std::string::npos);
  expect_in_order(text,
                  {"Message sizes", "MPI_Allreduce  8 KiB -> 800", "MPI_Send",
                   "0 B -> 10, 256 B -> 3990", "Communicator sizes", "MPI_Allreduce  4 -> 800"});
}

TEST(RenderText, ModelAddsTheEstimateColumns) {
  const strata::model::machine_model model = send_model();
  const std::string text = render(sample(), report_format::text, &model);
  // 4000 x 1.5 us latency, 1596000 B at 5 GB/s, the rest of 0.81 s waiting.
  expect_in_order(table_line(text, "MPI_Send"), {"6 ms", "319 us", "804 ms"});
  expect_in_order(table_line(text, "MPI_Wait"), {"(rank 3)", "-", "-", "-"});
}

TEST(RenderText, StatusAndControlCharacters) {
  job_record record = sample();
  record.job.status = job_status::signal;
  record.job.signal = 9;
  record.job.ranks_reported = 3;
  record.job.partial = true;
  record.job.user = "eve\x1b]0;owned\x07";
  const std::string text = render(record, report_format::text, nullptr);
  EXPECT_NE(text.find("killed by signal 9; only 3 of 4 ranks reported; partial record"),
            std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_NE(text.find("eve\\x1b]0;owned\\x07"), std::string::npos);
}

TEST(RenderText, RoutinesCountedWithoutTimingSayNotTimed) {
  const std::string text = modified([](json& doc) {
    json& rank = doc["routines"]["MPI_Comm_rank"];
    rank["timed"] = false;
    rank["time_s"] = 0;
    rank["min_s"] = 0;
    rank["max_s"] = 0;
    rank["per_rank"]["time_s"] = {{"min", 0}, {"mean", 0}, {"max", 0}, {"max_rank", 0}};
  });
  const auto parsed = parse_record(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  EXPECT_FALSE(find(*parsed.record, "MPI_Comm_rank").timed.value);
  EXPECT_TRUE(find(*parsed.record, "MPI_Send").timed.value); // absent: timed
  EXPECT_EQ(*parse_record(to_json(*parsed.record)).record, *parsed.record);
  const std::string report = render(*parsed.record, report_format::text, nullptr);
  std::string line;
  std::istringstream lines(report);
  while (std::getline(lines, line) && line.find("  MPI_Comm_rank ") == std::string::npos) {
  }
  // No time, no share of MPI time, no time per call and no imbalance: not zeros.
  EXPECT_NE(line.find("not timed"), std::string::npos) << report;
  EXPECT_EQ(line.find("0 s"), std::string::npos) << line;
  EXPECT_NE(report.find("\"not timed\": calls that cannot wait"), std::string::npos);
  const std::string csv = render(*parsed.record, report_format::csv, nullptr);
  EXPECT_NE(csv.find("\r\nMPI_Comm_rank,"), std::string::npos);
  const size_t row = csv.find("\r\nMPI_Comm_rank,");
  const std::string cells = csv.substr(row + 2, csv.find("\r\n", row + 2) - row - 2);
  EXPECT_EQ(cells.substr(0, cells.find(',', cells.find(',') + 1) + 2),
            "MPI_Comm_rank," + std::to_string(find(*parsed.record, "MPI_Comm_rank").calls) + ",,");
  expect_same_as_reference(text); // the site's bulk reader keeps the flag too
  EXPECT_EQ(error_of(modified([](json& doc) { doc["routines"]["MPI_Send"]["timed"] = 1; })),
            "routines.MPI_Send.timed: expected true or false, got 1");
}

TEST(RenderJson, IsTheNormalisedRecord) {
  const job_record record = sample();
  const std::string text = render(record, report_format::json, nullptr);
  EXPECT_EQ(text, to_json(record) + "\n"); // the record as written, ended for a terminal
  EXPECT_EQ(*parse_record(text).record, record);
}

TEST(RenderCsv, OneQuotedRowPerRoutineInTimeOrder) {
  job_record record = sample();
  const strata::model::machine_model model = send_model();
  const std::string csv = render(record, report_format::csv, &model);
  EXPECT_EQ(csv.substr(0, csv.find("\r\n")),
            "routine,calls,time_s,percent_of_mpi,us_per_call,bytes_sent,bytes_received,"
            "bytes_per_call,min_s,max_s,imbalance,imbalance_rank,latency_s,transfer_s,sync_s");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 10);
  expect_in_order(csv, routines_by_time);
  EXPECT_NE(csv.find("\r\nMPI_Send,4000,0.81,"), std::string::npos);
  EXPECT_NE(csv.find(",1596000,0,399,1.2e-06,0.0031,"), std::string::npos);
  EXPECT_NE(csv.find(",3,0.006,0.0003192,"), std::string::npos);
  EXPECT_NE(csv.find("\r\nMPI_Wait,16000,2.1,"), std::string::npos);

  ASSERT_EQ(record.routines.back().name, "MPI_Wait"); // routines are in name order
  record.routines.back().name = "MPI_\"Odd\",name";
  const std::string quoted = render(record, report_format::csv, nullptr);
  EXPECT_NE(quoted.find("\r\n\"MPI_\"\"Odd\"\",name\",16000,"), std::string::npos) << quoted;
}

TEST(RenderHtml, EscapesEveryStringFromTheRecord) {
  job_record record = sample();
  const std::string hostile = "<script>alert('x')</script>&\"";
  record.job.id = hostile;
  record.job.user = hostile;
  record.job.executable = hostile;
  record.job.host_names.push_back(hostile);
  record.job.mpi_library = hostile;
  record.job.start = hostile;
  record.job.environment[hostile] = hostile;
  record.job.counters[hostile] = {hostile, 1, 2};
  record.routines.back().name = hostile;  // MPI_Wait, which has no histogram
  record.routines.front().name = hostile; // MPI_Allreduce, which has both histograms
  const strata::model::machine_model model = send_model();
  const std::string html = render(record, report_format::html, &model);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("alert('x')"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"),
            std::string::npos);
  EXPECT_NE(html.find("a&amp;b"), std::string::npos);
  EXPECT_NE(html.find("say &quot;hi&quot;"), std::string::npos);
}

TEST(RenderHtml, SelfContainedPageWithHeadlineAndTable) {
  const std::string html = render(sample(), report_format::html, nullptr);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<style>"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  expect_in_order(html, {"<td>11.8 % of wall time", "<td>4 on 2 hosts</td>"});
  expect_in_order(html, routines_by_time);
  EXPECT_NE(html.find("<td>1.81 (rank 3)</td>"), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

// A page that shows the report among its own content gets the page's sections, and a style
// none of whose rules reaches outside the report.
TEST(RenderHtml, FragmentHoldsThePagesSectionsAndScopesItsStyle) {
  const std::string page = render(sample(), report_format::html, nullptr);
  const std::string fragment = render_html_fragment(sample());
  const std::string open = "<div class=\"report\"><style>";
  ASSERT_EQ(fragment.rfind(open, 0), 0u) << fragment;
  ASSERT_TRUE(fragment.ends_with("</div>"));
  for (const char* document_only : {"<!DOCTYPE", "<html", "<head", "<body", "<title"})
    EXPECT_EQ(fragment.find(document_only), std::string::npos) << document_only;
  const std::size_t style_end = fragment.find("</style>\n");
  ASSERT_NE(style_end, std::string::npos);
  const std::size_t body = page.find("<body>\n") + 7, body_end = page.rfind("</body>");
  EXPECT_EQ(fragment.substr(style_end + 9, fragment.size() - 6 - style_end - 9),
            page.substr(body, body_end - body));
  const std::string style = fragment.substr(open.size(), style_end - open.size());
  std::size_t rules = 0;
  for (std::size_t at = 0; at < style.size(); at = style.find('}', at) + 1, ++rules) {
    const std::string selectors = style.substr(at, style.find('{', at) - at);
    for (std::size_t s = 0; s < selectors.size(); s = selectors.find(',', s) + 1) {
      EXPECT_EQ(selectors.compare(s, 7, ".report"), 0) << selectors;
      if (selectors.find(',', s) == std::string::npos)
        break;
    }
  }
  EXPECT_EQ(rules, 11u) << style;
  EXPECT_NE(page.find("body{font-family"), std::string::npos); // the page's own, unscoped
  EXPECT_NE(style.find(".report{font-family"), std::string::npos);
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

TEST(RenderHtml, CommunicationHeatMapHasACellPerPair) {
  job_record record = sample();
  EXPECT_EQ(render(record, report_format::html, nullptr).find("<svg"), std::string::npos);
  const std::vector<message_pair> pairs = {{0, 3, 10, 1000}, {1, 3, 1, 10}};
  record.communication = communication_section{pairs, {{"point_to_point", pairs}}, {}, {}};
  const std::string html = render(record, report_format::html, nullptr);
  EXPECT_EQ(count_of(html, "<rect class=\"pair\""), 2u) << html;
  EXPECT_NE(html.find("rank 0 to rank 3: 1000 bytes in 10 messages"), std::string::npos);
  EXPECT_NE(html.find("fill=\"#08306b\"><title>rank 0 to rank 3"), std::string::npos); // darkest
  EXPECT_NE(html.find("one cell per pair of ranks"), std::string::npos);
  EXPECT_EQ(render(record, report_format::text, nullptr).find("<svg"), std::string::npos);
  // The fragment draws it unless the page around it draws its own; the tables stay.
  EXPECT_EQ(count_of(render_html_fragment(record), "<figure class=\"heatmap\">"), 1u);
  const std::string left_out = render_html_fragment(record, nullptr, heat_map::left_out);
  EXPECT_EQ(left_out.find("<svg"), std::string::npos) << left_out;
  EXPECT_NE(left_out.find("Point-to-point pairs by bytes"), std::string::npos);
}

// One-sided operations apart from the point-to-point tables and the heat map: each kind's totals
// and the heaviest one-sided pairs, origin to target; a job with one-sided operations alone
// still has them.
TEST(RenderText, OneSidedOperationsAreShownApartByKind) {
  job_record record = sample();
  const std::vector<message_pair> sends = {{0, 3, 10, 1000}};
  record.communication = communication_section{
      sends,
      {{"point_to_point", sends}, {"put", {{2, 1, 6, 480}}}, {"get", {{1, 2, 6, 144}}}},
      {},
      {}};
  const std::string text = render(record, report_format::text, nullptr);
  expect_in_order(text,
                  {"Point-to-point pairs by bytes", "Traffic by kind", "get", "point to point",
                   "put", "One-sided operations by bytes (origin to target)"});
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(\n\s*2\s+1\s+put\s+6\s+480\n)"))) << text;
  const std::string html = render(record, report_format::html, nullptr);
  EXPECT_EQ(count_of(html, "<rect class=\"pair\""), 1u); // the point-to-point pair alone
  EXPECT_NE(html.find("One-sided operations by bytes"), std::string::npos);

  record.communication = communication_section{{}, {{"accumulate", {{0, 1, 2, 16}}}}, {}, {}};
  const std::string alone = render(record, report_format::text, nullptr);
  EXPECT_EQ(alone.find("Point-to-point pairs by bytes"), std::string::npos);
  expect_in_order(alone, {"Traffic by kind", "accumulate", "One-sided operations by bytes"});
}

TEST(RenderHtml, CommunicationHeatMapGroupsRanksBeyondTwoHundredFiftySix) {
  job_record record = sample();
  record.job.ranks = 1000;
  std::vector<message_pair> ring;
  for (std::uint64_t r = 0; r < 1000; ++r)
    ring.push_back({r, (r + 1) % 1000, 1, 8});
  record.communication = communication_section{ring, {{"point_to_point", ring}}, {}, {}};
  const std::string svg = communication_heat_map_svg(*record.communication, 1000);
  EXPECT_NE(svg.find("each cell sums 4 x 4 ranks, 250 cells a side"), std::string::npos);
  // Ranks 0-3 send to each other three times (0->1, 1->2, 2->3) and once to ranks 4-7.
  EXPECT_NE(svg.find("ranks 0-3 to ranks 0-3: 24 bytes in 3 messages"), std::string::npos);
  EXPECT_NE(svg.find("ranks 0-3 to ranks 4-7: 8 bytes in 1 messages"), std::string::npos);
  EXPECT_EQ(count_of(svg, "<rect class=\"pair\""), 250u + 250u);
  EXPECT_NE(svg.find("width=\"556\""), std::string::npos); // 250 cells of 2 px and the margins
}

TEST(ParseFormat, KnowsTheFourFormats) {
  EXPECT_EQ(parse_format("text"), report_format::text);
  EXPECT_EQ(parse_format("json"), report_format::json);
  EXPECT_EQ(parse_format("csv"), report_format::csv);
  EXPECT_EQ(parse_format("html"), report_format::html);
  EXPECT_FALSE(parse_format("xml").has_value());
  EXPECT_FALSE(parse_format("").has_value());
}

class ReportMain : public ::testing::Test {
protected:
  std::string dir;
  void SetUp() override {
    char pattern[] = "/tmp/strata_record_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
  }
  void TearDown() override {
    for (const char* name : {"job.json", "model.json"})
      std::remove((dir + "/" + name).c_str());
    rmdir(dir.c_str());
  }
  std::string write(const std::string& name, const std::string& contents) {
    std::ofstream(dir + "/" + name, std::ios::binary) << contents;
    return dir + "/" + name;
  }
};

TEST_F(ReportMain, RendersOrNamesTheFileAtFault) {
  const std::string job = write("job.json", sample_text());
  const std::string model = write("model.json", R"({"schema":"strata.model/1","routines":{
      "MPI_Send":{"latency_s":1.5e-6,"bytes_per_s":5e9}}})");
  std::string output, error;
  EXPECT_EQ(report_main(job, "text", model, output, error), 0) << error;
  expect_in_order(output, {"11.8 %", "MPI_Wait", "sync"});

  output.clear();
  EXPECT_EQ(report_main(job, "csv", "", output, error), 0) << error;
  EXPECT_EQ(output.rfind("routine,calls,", 0), 0u);

  EXPECT_EQ(report_main(job, "xml", "", output, error), 2);
  EXPECT_EQ(error, "unknown report format \"xml\" (expected text, json, csv or html)");

  EXPECT_EQ(report_main(dir + "/absent.json", "text", "", output, error), 2);
  EXPECT_EQ(error, dir + "/absent.json: cannot open: No such file or directory");

  write("job.json", modified([](json& doc) { doc["routines"]["MPI_Send"].erase("calls"); }));
  EXPECT_EQ(report_main(job, "text", "", output, error), 2);
  EXPECT_EQ(error, job + ": routines.MPI_Send.calls is missing");

  write("job.json", sample_text());
  write("model.json", R"({"schema":"strata.model/2"})");
  EXPECT_EQ(report_main(job, "text", model, output, error), 2);
  EXPECT_EQ(error, model + ": schema is \"strata.model/2\", this Strata reads strata.model/1");
}

} // namespace

TEST(Record, FinalizeTimeIsOptional) {
  EXPECT_FALSE(sample().job.profiler_finalize_s.has_value()); // a rebuilt record has none
  const auto timed =
      parse_record(modified([](json& doc) { doc["job"]["profiler_finalize_s"] = 0.0125; }));
  ASSERT_TRUE(timed.ok()) << timed.error;
  EXPECT_EQ(timed.record->job.profiler_finalize_s, 0.0125);
  expect_same_as_reference(to_json(*timed.record)); // the site's bulk reader keeps it too
  EXPECT_EQ(parse_record(to_json(*timed.record)).record->job.profiler_finalize_s, 0.0125);
  EXPECT_NE(render(*timed.record, report_format::text, nullptr)
                .find("record built at finalize in 12.5 ms"),
            std::string::npos);
  EXPECT_TRUE(
      parse_record(modified([](json& doc) { doc["job"]["profiler_finalize_s"] = nullptr; })).ok());
  EXPECT_EQ(error_of(modified([](json& doc) { doc["job"]["profiler_finalize_s"] = -1; })),
            "job.profiler_finalize_s: expected a non-negative number, got -1");
}

TEST(Record, PollBytesEstimatedIsOptional) {
  EXPECT_FALSE(sample().job.poll_bytes_estimated.has_value()); // absent: not known
  EXPECT_EQ(render(sample(), report_format::text, nullptr).find("estimated from the timed"),
            std::string::npos);
  const auto lean =
      parse_record(modified([](json& doc) { doc["job"]["poll_bytes_estimated"] = true; }));
  ASSERT_TRUE(lean.ok()) << lean.error;
  EXPECT_EQ(lean.record->job.poll_bytes_estimated, true);
  expect_same_as_reference(to_json(*lean.record)); // the site's bulk reader keeps it too
  EXPECT_EQ(parse_record(to_json(*lean.record)).record->job.poll_bytes_estimated, true);
  // Exact polls say so, which is not the same as not saying.
  const auto exact =
      parse_record(modified([](json& doc) { doc["job"]["poll_bytes_estimated"] = false; }));
  ASSERT_TRUE(exact.ok()) << exact.error;
  EXPECT_EQ(parse_record(to_json(*exact.record)).record->job.poll_bytes_estimated, false);
  EXPECT_NE(render(*lean.record, report_format::text, nullptr)
                .find("MPI_Iprobe) are estimated from the timed ones"),
            std::string::npos);
  EXPECT_EQ(error_of(modified([](json& doc) { doc["job"]["poll_bytes_estimated"] = 1; })),
            "job.poll_bytes_estimated: expected true or false, got 1");
}

TEST(Record, ModuleAndVersionAreOptional) {
  EXPECT_FALSE(sample().job.module.has_value()); // absent: the profile's, of an older Strata
  EXPECT_FALSE(sample().job.strata_version.has_value());
  const auto overhead = parse_record(modified([](json& doc) {
    doc["job"]["module"] = "overhead";
    doc["job"]["strata_version"] = "0.1.0";
  }));
  ASSERT_TRUE(overhead.ok()) << overhead.error;
  EXPECT_EQ(overhead.record->job.module, "overhead");
  EXPECT_EQ(overhead.record->job.strata_version, "0.1.0");
  expect_same_as_reference(to_json(*overhead.record)); // the site's bulk reader keeps them too
  EXPECT_EQ(parse_record(to_json(*overhead.record)).record->job.module, "overhead");
  EXPECT_EQ(error_of(modified([](json& doc) { doc["job"]["module"] = "trace"; })),
            "job.module: expected profile or overhead, got trace");
  EXPECT_EQ(error_of(modified([](json& doc) { doc["job"]["strata_version"] = 1; })),
            "job.strata_version: expected a string, got 1");
}

// The writer writes what the profiler has always written: keys in name order, one space of
// indent, no newline at the end, and nothing where absence says the same.
TEST(ToJson, LeavesOutWhatItsAbsenceSays) {
  job_record record = sample();
  record.job.counters.clear();
  record.job.abort_code.reset();
  record.job.profiler_finalize_s.reset();
  record.job.poll_bytes_estimated.reset();
  record.job.model_clamped_calls.reset();
  record.callsites.clear();
  record.callsites_dropped.value = 0;
  for (routine& r : record.routines)
    r.timed.value = true;
  const std::string text = to_json(record);
  EXPECT_EQ(text.substr(0, 12), "{\n \"job\": {\n");
  EXPECT_NE(text.back(), '\n');
  const json doc = json::parse(text);
  EXPECT_EQ(doc["job"]["abort_code"], nullptr); // "none" is null, as it always was
  for (const char* key :
       {"counters", "profiler_finalize_s", "poll_bytes_estimated", "model_clamped_calls"})
    EXPECT_FALSE(doc["job"].contains(key)) << key;
  EXPECT_FALSE(doc.contains("callsites"));
  EXPECT_FALSE(doc.contains("callsites_dropped"));
  EXPECT_FALSE(doc["routines"]["MPI_Send"].contains("timed"));
  EXPECT_EQ(*parse_record(text).record, record);

  // Calls missed by a full call-site table come with the (here empty) list of call sites.
  record.callsites_dropped.value = 3;
  record.job.model_clamped_calls = 7;
  const json dropped = json::parse(to_json(record));
  EXPECT_EQ(dropped["callsites"], json::array());
  EXPECT_EQ(dropped["callsites_dropped"], 3);
  EXPECT_EQ(dropped["job"]["model_clamped_calls"], 7);
  EXPECT_EQ(*parse_record(to_json(record)).record, record);
}

TEST(Record, ClockIsOptionalAndChecked) {
  EXPECT_FALSE(sample().job.clock.has_value()); // absent: not checked
  const auto with_clock = [](const char* status) {
    return modified([status](json& doc) {
      doc["job"]["clock"] = {{"source", "tsc"},     {"kernel_clocksource", "kvm-clock"},
                             {"tsc_hz", 2.1e9},     {"rate_spread_ppm", 0.5},
                             {"drift_ppm", 2000.0}, {"offset_ns", 400000},
                             {"migrated", false},   {"status", status}};
    });
  };
  const auto corrected = parse_record(with_clock("corrected"));
  ASSERT_TRUE(corrected.ok()) << corrected.error;
  ASSERT_TRUE(corrected.record->job.clock.has_value());
  EXPECT_EQ(corrected.record->job.clock->kernel_clocksource, "kvm-clock");
  EXPECT_EQ(corrected.record->job.clock->offset_ns, 400000u);
  expect_same_as_reference(to_json(*corrected.record)); // the site's bulk reader keeps it too
  EXPECT_EQ(*parse_record(to_json(*corrected.record)).record, *corrected.record);
  EXPECT_NE(render(*corrected.record, report_format::text, nullptr)
                .find("times corrected for a calibration error of 2000.0 ppm"),
            std::string::npos);
  const auto flagged = parse_record(with_clock("flagged"));
  ASSERT_TRUE(flagged.ok()) << flagged.error;
  EXPECT_NE(render(*flagged.record, report_format::text, nullptr).find("times may be off"),
            std::string::npos);
  EXPECT_EQ(error_of(with_clock("fine")),
            "job.clock.status: expected one of ok, corrected, flagged, got \"fine\"");
  EXPECT_EQ(error_of(modified([](json& doc) {
              doc["job"]["clock"] = {{"source", "tsc"}};
            })),
            "job.clock.kernel_clocksource is missing");
}
