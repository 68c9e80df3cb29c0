#include "profiler/time_over_model.hpp"

#include "common/atomic_file.hpp"
#include "model/model_file.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <unistd.h>

using namespace strata::profiler;

namespace {

// A model whose T_f(p, b) is 10 us for MPI_Send at p = 2 and 4, b = 1 and 100.
std::string model_file() {
  strata::model::machine_model model;
  model.machine = {"node", "Open MPI", 4, "2026-01-01T00:00:00Z", 1e-9};
  model.routines["MPI_Send"] = {1e-6, 1e9};
  for (const uint64_t p : {2, 4})
    for (const uint64_t b : {1, 100})
      model.operations["MPI_Send"].push_back(
          {p, b, 200, 1e-6, 2e-6, 2e-6, 3e-5, "poisson", 1, 1e-7, 1, 1, 0.5, true, 1e-5});
  const std::string path = testing::TempDir() + "/model." + std::to_string(::getpid()) + ".json";
  EXPECT_EQ(strata::common::write_atomically(path, strata::model::write_model(model)), "");
  return path;
}

} // namespace

TEST(TimeOverModel, CallsAreComparedWithTheirBenchmarkedOperation) {
  EXPECT_EQ(model_operation("MPI_Send"), "MPI_Send");
  EXPECT_EQ(model_operation("MPI_Recv"), "MPI_Send");
  EXPECT_EQ(model_operation("MPI_Ssend_c"), "MPI_Send");
  EXPECT_EQ(model_operation("MPI_Wait"), "MPI_Isend");
  EXPECT_EQ(model_operation("MPI_Allreduce_c"), "MPI_Allreduce");
}

TEST(TimeOverModel, TheTimeOverTfIsWasted) {
  const std::string path = model_file();
  time_over_model model;
  EXPECT_FALSE(model.loaded());
  ASSERT_EQ(model.load(path, {"MPI_Init", "MPI_Send", "MPI_Recv", "MPI_Barrier"}), "");
  EXPECT_TRUE(model.loaded());
  uint64_t clamped = 0;
  EXPECT_EQ(model.wasted_ns(1, 2, 25'000, 50, clamped), 15'000u); // 25 us against 10 us
  EXPECT_EQ(model.wasted_ns(2, 4, 25'000, 1, clamped), 15'000u);  // a receive: as a send
  EXPECT_EQ(model.wasted_ns(1, 2, 4'000, 50, clamped), 0u);       // faster than the model
  EXPECT_EQ(model.wasted_ns(3, 2, 25'000, 50, clamped), 0u);      // not benchmarked
  EXPECT_EQ(clamped, 0u);
  EXPECT_EQ(model.wasted_ns(1, 8, 25'000, 50, clamped), 15'000u); // 8 ranks: off the grid
  EXPECT_EQ(clamped, 1u);
  std::remove(path.c_str());
}

TEST(TimeOverModel, AModelThatCannotBeUsedIsSaidInOneLine) {
  time_over_model model;
  EXPECT_EQ(model.load("/nonexistent/model.json", {"MPI_Send"}),
            "cannot read /nonexistent/model.json");
  const std::string path =
      testing::TempDir() + "/routines-only." + std::to_string(::getpid()) + ".json";
  ASSERT_EQ(strata::common::write_atomically(path, R"({"schema":"strata.model/1","routines":{}})"),
            "");
  EXPECT_EQ(model.load(path, {"MPI_Send"}), path + ": machine is missing");
  EXPECT_FALSE(model.loaded());
  std::remove(path.c_str());
}
