#include "model/grid.hpp"
#include "model/model_file.hpp"
#include "model/sample_times.hpp"

#include <functional>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <random>

namespace strata::model {
namespace {

using json = nlohmann::json;
using stats::fit_result;
using stats::fit_sample;
using namespace strata::model::testing;

base_point point_at(std::uint64_t p, std::uint64_t b, double t_max) {
  return {p, b, 200, 1e-6, 1.2e-6, 1.1e-6, 3e-6, "poisson", 1.25, 1e-7, 4.5, 3, 0.21, true, t_max};
}

machine_model sample_model() {
  machine_model model;
  model.machine = {"node01", "Open MPI 4.1.4", 8, "2024-05-01T12:00:00Z", 1e-9};
  model.routines["MPI_Send"] = {1.5e-6, 5e9};
  model.routines["MPI_Allreduce"] = {0.1, 1.0 / 3.0};
  model.operations["MPI_Send"] = {point_at(2, 1, 2e-6), point_at(2, 10, 3e-6), point_at(4, 1, 4e-6),
                                  point_at(4, 10, 7e-6)};
  model.operations["MPI_Barrier"] = {};
  model.quantile = 0.95;
  return model;
}

TEST(ModelFile, RoundTrips) {
  const machine_model model = sample_model();
  const std::string text = write_model(model);
  const model_read_result again = read_model(text);
  ASSERT_TRUE(again.ok()) << again.error;
  EXPECT_EQ(*again.model, model);
  // The part the reports read (model_parts::routines) keeps its documented layout.
  EXPECT_EQ(json::parse(text)["routines"],
            json::parse(R"({"MPI_Allreduce":{"latency_s":0.1,"bytes_per_s":0.3333333333333333},
                            "MPI_Send":{"latency_s":1.5e-6,"bytes_per_s":5e9}})"));
  EXPECT_EQ(json::parse(text)["schema"], "strata.model/1");
  EXPECT_EQ(json::parse(text)["operations"]["MPI_Send"]["points"][1]["b"], 10);
}

TEST(ModelFile, EachMalformedInputNamesItsPath) {
  const json good = json::parse(write_model(sample_model()));
  const auto error_of = [&good](const std::function<void(json&)>& change) {
    json doc = good;
    change(doc);
    const model_read_result result = read_model(doc.dump());
    EXPECT_FALSE(result.ok());
    return result.error;
  };
  EXPECT_EQ(read_model("").error, "not JSON: the text is empty");
  EXPECT_EQ(read_model("{\"schema\":").error,
            "not JSON: the text ends early at byte 10 (truncated?)");
  EXPECT_EQ(read_model("{\n  \"schema\" 1}").error,
            "not JSON: syntax error at byte 14 (line 2, column 12)");
  EXPECT_EQ(read_model("[1]").error, "top level: expected an object, got an array");
  EXPECT_EQ(read_model("{\"schema\":\"strata.model/2\"}").error,
            "schema is \"strata.model/2\", this Strata reads strata.model/1");
  EXPECT_EQ(error_of([](json& d) { d.erase("schema"); }),
            "schema is missing (expected \"strata.model/1\")");
  EXPECT_EQ(error_of([](json& d) { d["machine"].erase("ranks"); }), "machine.ranks is missing");
  EXPECT_EQ(error_of([](json& d) { d["machine"]["ranks"] = 0; }),
            "machine.ranks: expected a positive integer, got 0");
  EXPECT_EQ(error_of([](json& d) { d["machine"]["created"] = "yesterday"; }),
            "machine.created: expected an ISO 8601 time such as 2024-05-01T12:00:00Z, got "
            "\"yesterday\"");
  EXPECT_EQ(error_of([](json& d) { d["machine"]["timer_resolution_s"] = 0; }),
            "machine.timer_resolution_s: expected a positive number, got 0");
  EXPECT_EQ(error_of([](json& d) { d["routines"]["MPI_Send"]["bytes_per_s"] = 0; }),
            "routines.MPI_Send.bytes_per_s: expected a positive number, got 0");
  EXPECT_EQ(error_of([](json& d) { d["routines"]["MPI_Send"]["latency_s"] = "fast"; }),
            "routines.MPI_Send.latency_s: expected a non-negative number, got \"fast\"");
  EXPECT_EQ(error_of([](json& d) { d["routines"][""] = d["routines"]["MPI_Send"]; }),
            "routines: a name is empty");
  EXPECT_EQ(error_of([](json& d) { d["operations"]["MPI_Send"] = json::array(); }),
            "operations.MPI_Send: expected an object, got an array");
  EXPECT_EQ(error_of([](json& d) { d["operations"]["MPI_Send"].erase("points"); }),
            "operations.MPI_Send.points is missing");
  const auto point = [](json& d) -> json& { return d["operations"]["MPI_Send"]["points"][2]; };
  EXPECT_EQ(error_of([&](json& d) { point(d)["p"] = 0; }),
            "operations.MPI_Send.points[2].p: expected a positive integer, got 0");
  EXPECT_EQ(error_of([&](json& d) { point(d)["b"] = -1; }),
            "operations.MPI_Send.points[2].b: expected a non-negative integer, got -1");
  EXPECT_EQ(error_of([&](json& d) { point(d)["dof"] = 2.5; }),
            "operations.MPI_Send.points[2].dof: expected a non-negative integer, got 2.5");
  EXPECT_EQ(error_of([&](json& d) { point(d)["model"] = "gauss"; }),
            "operations.MPI_Send.points[2].model: expected poisson, exponential or none, got "
            "\"gauss\"");
  EXPECT_EQ(error_of([&](json& d) { point(d)["p_value"] = 1.5; }),
            "operations.MPI_Send.points[2].p_value: expected a number from 0 to 1, got 1.5");
  EXPECT_EQ(error_of([&](json& d) { point(d)["accepted"] = 1; }),
            "operations.MPI_Send.points[2].accepted: expected true or false, got 1");
  EXPECT_EQ(error_of([&](json& d) { point(d)["median_s"] = 5e-6; }),
            "operations.MPI_Send.points[2]: expected min_s <= median_s <= max_s, got 1e-06, "
            "5e-06, 3e-06");
  EXPECT_EQ(error_of([&](json& d) { point(d)["mean_s"] = 0.5; }),
            "operations.MPI_Send.points[2]: mean_s 0.5 lies outside [min_s, max_s]");
  EXPECT_EQ(error_of([&](json& d) { point(d)["t_max_s"] = 5e-7; }),
            "operations.MPI_Send.points[2]: t_max_s 5e-07 is below min_s 1e-06");
  EXPECT_EQ(error_of([&](json& d) { point(d)["b"] = 10; }),
            "operations.MPI_Send.points[3]: a second point for p=4, b=10");
  EXPECT_EQ(error_of([](json& d) { d["quantile"] = 1; }),
            "quantile: expected a number between 0 and 1, exclusive, got 1");
  EXPECT_EQ(error_of([](json& d) { d.erase("partial"); }), "partial is missing");
  // Names from the file reach the message printable.
  EXPECT_EQ(error_of([](json& d) { d["routines"]["MPI\nSend"] = 5; }),
            "routines.MPI\\x0aSend: expected an object, got 5");
}

TEST(ModelFile, AcceptsIntegersWrittenAsDoublesAndIgnoresUnknownKeys) {
  json doc = json::parse(write_model(sample_model()));
  doc["operations"]["MPI_Send"]["points"][0]["n"] = 200.0;
  doc["future_section"] = {{"x", 1}};
  doc["machine"]["gpu"] = "none";
  const model_read_result result = read_model(doc.dump());
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_EQ(*result.model, sample_model());
}

TEST(ModelFile, BuildsTheInterpolationTable) {
  const machine_model model = sample_model();
  const table_result send = build_table(model, "MPI_Send");
  ASSERT_TRUE(send.ok()) << send.error;
  EXPECT_EQ(send.table->lookup(2, 1).value, 2e-6);
  EXPECT_EQ(send.table->lookup(4, 10).value, 7e-6);
  EXPECT_NEAR(send.table->lookup(3, 5.5).value, (2e-6 + 3e-6 + 4e-6 + 7e-6) / 4, 1e-18);
  EXPECT_TRUE(send.table->lookup(8, 10).clamped);

  EXPECT_EQ(build_table(model, "MPI_Recv").error, "operations: no MPI_Recv");
  EXPECT_EQ(build_table(model, "MPI_Barrier").error,
            "operations.MPI_Barrier.points: expected one point per (p, b) of a full grid, got 0 "
            "points over 0 p and 0 b values");
  machine_model holey = model;
  holey.operations["MPI_Send"].pop_back();
  EXPECT_EQ(build_table(holey, "MPI_Send").error,
            "operations.MPI_Send.points: expected one point per (p, b) of a full grid, got 3 "
            "points over 2 p and 2 b values");
}

TEST(ModelFile, FitResultsMakePointsThatReadBack) {
  const fit_result fit =
      fit_sample(times_from(draw(std::poisson_distribution<int>(3.0), 300)), window, 0.95);
  ASSERT_TRUE(fit.ok()) << fit.message;
  const fit_result flat = fit_sample(std::vector<double>(20, 5e-6), window, 0.95);
  machine_model model = sample_model();
  model.operations["MPI_Bcast"] = {make_point(2, 8, fit), make_point(2, 16, flat)};
  EXPECT_EQ(model.operations["MPI_Bcast"][0].model, "poisson");
  EXPECT_EQ(model.operations["MPI_Bcast"][0].n, 300u);
  EXPECT_EQ(model.operations["MPI_Bcast"][1].model, "none");
  const model_read_result again = read_model(write_model(model));
  ASSERT_TRUE(again.ok()) << again.error;
  const table_result bcast = build_table(*again.model, "MPI_Bcast");
  ASSERT_TRUE(bcast.ok()) << bcast.error;
  EXPECT_EQ(bcast.table->lookup(2, 8).value, fit.t_max);
  EXPECT_EQ(bcast.table->lookup(2, 16).value, 5e-6);
}

// Reports need "routines" alone: a hand-written model may hold only that, and the rest of the
// file is not read.
TEST(ModelFile, ReportsReadOnlyTheRoutines) {
  const auto routines_only = [](std::string_view text) {
    return read_model(text, model_parts::routines);
  };
  const auto model = routines_only(
      R"({"schema":"strata.model/1","routines":{"MPI_Send":{"latency_s":1.5e-6,"bytes_per_s":5e9}}})");
  ASSERT_TRUE(model.ok()) << model.error;
  EXPECT_DOUBLE_EQ(model.model->routines.at("MPI_Send").latency_s, 1.5e-6);
  EXPECT_DOUBLE_EQ(model.model->routines.at("MPI_Send").bytes_per_s, 5e9);
  EXPECT_EQ(routines_only(R"({"schema":"strata.job/1"})").error,
            "schema is \"strata.job/1\", this Strata reads strata.model/1");
  EXPECT_EQ(routines_only(R"({"schema":"strata.model/1","routines":{"MPI_Send":{"latency_s":1,
            "bytes_per_s":0}}})")
                .error,
            "routines.MPI_Send.bytes_per_s: expected a positive number, got 0");
  EXPECT_EQ(routines_only(R"({"schema":"strata.model/1","routines":{"MPI_Send":{"latency_s":"1us",
            "bytes_per_s":1}}})")
                .error,
            "routines.MPI_Send.latency_s: expected a non-negative number, got \"1us\"");
  EXPECT_EQ(routines_only(R"({"schema":"strata.model/1"})").error, "routines is missing");
  // A whole model reads as its routines too, whatever else it holds.
  json doc = json::parse(write_model(sample_model()));
  doc["machine"] = "anything";
  const auto whole = routines_only(doc.dump());
  ASSERT_TRUE(whole.ok()) << whole.error;
  EXPECT_EQ(whole.model->routines, sample_model().routines);
  EXPECT_EQ(read_model(doc.dump()).error, "machine: expected an object, got \"anything\"");
}

} // namespace
} // namespace strata::model
