#include "profiler/mpi_t_totals.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <numeric>
#include <random>
#include <variant>

namespace {

using namespace strata::profiler::mpi_t;
using strata::record::mpi_t_pvar;
using strata::record::pvar_number;

pvar_description described(const std::string& name, value_kind kind, int class_offset) {
  pvar_description d;
  d.name = name;
  d.var_class = class_name(class_offset);
  d.binding = "none";
  d.datatype = kind == value_kind::floating ? "double" : "unsigned long";
  d.kind = kind;
  d.fold = class_fold(class_offset);
  d.elements = 1;
  d.accumulates = class_accumulates(class_offset);
  return d;
}

// Every rank's buffer combined in the order given (as any reduction tree might).
std::vector<uint64_t> reduce_in_order(const std::vector<std::vector<uint64_t>>& buffers,
                                      const std::vector<size_t>& order) {
  std::vector<uint64_t> all = buffers[order[0]];
  for (size_t i = 1; i < order.size(); ++i) {
    std::vector<uint64_t> next = buffers[order[i]];
    combine_packed(all.data(), next.data()); // next = all (+) next
    all = next;
  }
  return all;
}

TEST(MpiTClasses, NamesFoldsAndWhatAccumulates) {
  EXPECT_EQ(class_name(0), "state");
  EXPECT_EQ(class_name(6), "counter");
  EXPECT_EQ(class_name(8), "timer");
  EXPECT_EQ(class_name(42), "class 42");
  EXPECT_TRUE(class_accumulates(6));
  EXPECT_TRUE(class_accumulates(7));
  EXPECT_TRUE(class_accumulates(8));
  EXPECT_FALSE(class_accumulates(2)); // size: a state of the queue when read
  EXPECT_EQ(class_fold(4), fold_rule::highest);
  EXPECT_EQ(class_fold(5), fold_rule::lowest);
  EXPECT_EQ(class_fold(2), fold_rule::sum);
}

TEST(MpiTFold, ElementsOfEachKind) {
  const uint64_t u[] = {3, 9, 1};
  EXPECT_EQ(fold(value_kind::unsigned_integer, fold_rule::sum, u, 3), 13u);
  EXPECT_EQ(fold(value_kind::unsigned_integer, fold_rule::highest, u, 3), 9u);
  EXPECT_EQ(fold(value_kind::unsigned_integer, fold_rule::lowest, u, 3), 1u);
  const uint64_t s[] = {bits_of(int64_t{-5}), bits_of(int64_t{2}), bits_of(int64_t{-7})};
  EXPECT_EQ(static_cast<int64_t>(fold(value_kind::signed_integer, fold_rule::sum, s, 3)), -10);
  EXPECT_EQ(static_cast<int64_t>(fold(value_kind::signed_integer, fold_rule::highest, s, 3)), 2);
  EXPECT_EQ(static_cast<int64_t>(fold(value_kind::signed_integer, fold_rule::lowest, s, 3)), -7);
  const uint64_t d[] = {bits_of(0.5), bits_of(2.25), bits_of(-1.0)};
  EXPECT_EQ(double_of(fold(value_kind::floating, fold_rule::sum, d, 3)), 1.75);
  EXPECT_EQ(double_of(fold(value_kind::floating, fold_rule::lowest, d, 3)), -1.0);
  EXPECT_EQ(double_of(fold(value_kind::floating, fold_rule::sum, d, 0)), 0.0);
}

TEST(MpiTFold, SinceABaseline) {
  EXPECT_EQ(since(value_kind::unsigned_integer, 1000, 400), 600u);
  EXPECT_EQ(double_of(since(value_kind::floating, bits_of(2.5), bits_of(0.5))), 2.0);
}

TEST(MpiTReduction, ExactInAnyOrderWithTheLowestRankOnTies) {
  const std::vector<pvar_description> pvars = {
      described("bytes_sent", value_kind::unsigned_integer, 6),
      described("queue_low", value_kind::signed_integer, 5),
      described("time_in_progress", value_kind::floating, 8)};
  const size_t ranks = 37;
  std::mt19937_64 random(7);
  std::vector<std::vector<rank_value>> values(ranks, std::vector<rank_value>(pvars.size()));
  for (size_t r = 0; r < ranks; ++r) {
    // Large counters (beyond 2^53) stay exact; ties in minima and maxima are frequent.
    values[r][0] = {true, (uint64_t{1} << 57) + random() % 4};
    values[r][1] = {r % 5 != 3, bits_of(static_cast<int64_t>(random() % 7) - 3)};
    values[r][2] = {true, bits_of(static_cast<double>(random() % 1000) / 4)};
  }
  std::vector<std::vector<uint64_t>> buffers;
  for (size_t r = 0; r < ranks; ++r)
    buffers.push_back(pack_rank(pvars, values[r], r));
  std::vector<size_t> order(ranks);
  std::iota(order.begin(), order.end(), 0);
  const std::vector<uint64_t> first = reduce_in_order(buffers, order);
  for (int shuffle = 0; shuffle < 5; ++shuffle) {
    std::shuffle(order.begin(), order.end(), random);
    EXPECT_EQ(reduce_in_order(buffers, order), first);
  }
  const std::vector<mpi_t_pvar> out = unpack_pvars(pvars, first);
  ASSERT_EQ(out.size(), 3u);
  for (size_t i = 0; i < pvars.size(); ++i) {
    // The expectation straight from the values, rank by rank.
    uint64_t n = 0, min_rank = 0, max_rank = 0;
    long double sum = 0;
    long double min = 0, max = 0;
    for (size_t r = 0; r < ranks; ++r) {
      if (!values[r][i].read)
        continue;
      const uint64_t bits = values[r][i].bits;
      const long double v = pvars[i].kind == value_kind::floating ? double_of(bits)
                            : pvars[i].kind == value_kind::signed_integer
                                ? static_cast<long double>(static_cast<int64_t>(bits))
                                : static_cast<long double>(bits);
      sum += v;
      if (n == 0 || v < min) {
        min = v;
        min_rank = r;
      }
      if (n == 0 || v > max) {
        max = v;
        max_rank = r;
      }
      ++n;
    }
    const auto as_long_double = [](const pvar_number& p) {
      return std::visit([](auto v) { return static_cast<long double>(v); }, p.value);
    };
    EXPECT_EQ(out[i].ranks, n) << pvars[i].name;
    EXPECT_EQ(as_long_double(out[i].sum), sum) << pvars[i].name;
    EXPECT_EQ(as_long_double(out[i].min), min) << pvars[i].name;
    EXPECT_EQ(as_long_double(out[i].max), max) << pvars[i].name;
    EXPECT_EQ(out[i].min_rank, min_rank) << pvars[i].name;
    EXPECT_EQ(out[i].max_rank, max_rank) << pvars[i].name;
    EXPECT_EQ(out[i].var_class, pvars[i].var_class);
  }
  // The counter's sum is exact past 2^53, as an unsigned integer.
  ASSERT_TRUE(std::holds_alternative<uint64_t>(out[0].sum.value));
  uint64_t exact = 0;
  for (size_t r = 0; r < ranks; ++r)
    exact += values[r][0].bits;
  EXPECT_EQ(std::get<uint64_t>(out[0].sum.value), exact);
}

TEST(MpiTReduction, NegativeValuesStaySignedAndUnreadVariablesSayWhy) {
  std::vector<pvar_description> pvars = {described("level", value_kind::signed_integer, 1),
                                         described("window_puts", value_kind::unsigned_integer, 6)};
  pvars[1].unread = "bound to a window, of which the profile holds none";
  const std::vector<rank_value> rank0 = {{true, bits_of(int64_t{-4})}, {}};
  const std::vector<rank_value> rank1 = {{true, bits_of(int64_t{6})}, {}};
  std::vector<uint64_t> all = pack_rank(pvars, rank1, 1);
  const std::vector<uint64_t> mine = pack_rank(pvars, rank0, 0);
  combine_packed(mine.data(), all.data());
  const auto out = unpack_pvars(pvars, all);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(std::get<uint64_t>(out[0].sum.value), 2u); // non-negative: written unsigned
  EXPECT_EQ(std::get<int64_t>(out[0].min.value), -4);
  EXPECT_EQ(out[0].min_rank, 0u);
  EXPECT_EQ(std::get<uint64_t>(out[0].max.value), 6u);
  EXPECT_EQ(out[0].max_rank, 1u);
  EXPECT_EQ(out[1].ranks, 0u);
  EXPECT_EQ(out[1].unread, "bound to a window, of which the profile holds none");
}

TEST(MpiTReduction, ARankWithoutMpiTTakesPartWithNothingRead) {
  const std::vector<pvar_description> pvars = {
      described("unexpected", value_kind::unsigned_integer, 2)};
  const std::vector<pvar_description> none(1); // what a rank whose MPI_T failed packs
  std::vector<uint64_t> failed = pack_rank(none, {}, 0);
  const std::vector<uint64_t> working = pack_rank(pvars, {{true, 5}}, 1);
  combine_packed(working.data(), failed.data());
  const auto out = unpack_pvars(pvars, failed);
  EXPECT_EQ(out[0].ranks, 1u);
  EXPECT_EQ(out[0].min_rank, 1u);
  EXPECT_EQ(std::get<uint64_t>(out[0].sum.value), 5u);
}

TEST(MpiTLayout, FingerprintTellsListsApart) {
  const std::vector<pvar_description> a = {described("x", value_kind::unsigned_integer, 6)};
  std::vector<pvar_description> b = a;
  EXPECT_EQ(layout_fingerprint(a), layout_fingerprint(b));
  b[0].var_class = class_name(2);
  EXPECT_NE(layout_fingerprint(a), layout_fingerprint(b));
  EXPECT_NE(layout_fingerprint(a), layout_fingerprint({}));
  EXPECT_EQ(packed_words(3), 1 + 3 * words_per_pvar);
  EXPECT_TRUE(unpack_pvars(a, {}).empty());
  EXPECT_TRUE(unpack_pvars(a, {5, 1}).empty()); // shorter than its count says
}

// The ranks' agreement words as MPI_Allreduce with MPI_MAX leaves them.
agreement agree_over(const std::vector<std::pair<size_t, uint64_t>>& ranks) {
  agreement_layout reduced{};
  for (const auto& [count, fingerprint] : ranks) {
    const agreement_layout mine = agreement_of_rank(count, fingerprint);
    for (size_t w = 0; w < agreement_words; ++w)
      reduced[w] = std::max(reduced[w], mine[w]);
  }
  return agreement_over_ranks(reduced);
}

TEST(MpiTLayout, RanksAgreeOnlyWhenEveryListingRankListsTheSame) {
  const uint64_t f = 0x0123456789abcdefULL;
  EXPECT_TRUE(agree_over({{7, f}, {7, f}, {7, f}}).same_variables);
  EXPECT_EQ(agree_over({{7, f}, {7, f}}).most_pvars, 7u);
  // A difference in either half, in either direction, on any rank.
  EXPECT_FALSE(agree_over({{7, f}, {7, f ^ 1}, {7, f}}).same_variables);
  EXPECT_FALSE(agree_over({{7, f}, {7, f ^ (1ULL << 40)}}).same_variables);
  EXPECT_FALSE(agree_over({{7, f ^ (1ULL << 63)}, {7, f}}).same_variables);
  // A rank that lists none (MPI_T failed there) does not stand in the way.
  EXPECT_TRUE(agree_over({{0, 0}, {7, f}, {0, 0}}).same_variables);
  EXPECT_EQ(agree_over({{0, 0}, {7, f}}).most_pvars, 7u);
  EXPECT_TRUE(agree_over({{0, 0}, {0, 0}}).same_variables);
  EXPECT_EQ(agree_over({{0, 0}, {0, 0}}).most_pvars, 0u);
  // Fingerprints whose halves are all zero or all ones agree with themselves only.
  EXPECT_TRUE(agree_over({{3, 0}, {3, 0}}).same_variables);
  EXPECT_FALSE(agree_over({{3, 0}, {3, ~0ULL}}).same_variables);
}

TEST(MpiTControlVariables, ControlVariablesEachEnvironmentVariableSets) {
  using names = std::vector<std::string>;
  EXPECT_EQ(cvars_set_by("openmpi", "OMPI_MCA_btl_vader_eager_limit"),
            names{"btl_vader_eager_limit"});
  EXPECT_TRUE(cvars_set_by("openmpi", "OMPI_MCA_").empty());
  EXPECT_TRUE(cvars_set_by("openmpi", "PATH").empty());
  EXPECT_TRUE(cvars_set_by("openmpi", "btl_vader_eager_limit").empty());
  EXPECT_EQ(cvars_set_by("mpich", "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE"),
            names{"MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE"});
  EXPECT_EQ(cvars_set_by("mpich", "MPICH_CH3_EAGER_MAX_MSG_SIZE"),
            (names{"MPICH_CH3_EAGER_MAX_MSG_SIZE", "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE"}));
  EXPECT_TRUE(cvars_set_by("none", "OMPI_MCA_x").empty());
}

} // namespace
