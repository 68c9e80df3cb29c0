#include "config/option_binder.hpp"

#include <gtest/gtest.h>
#include <strata/module.h>
#include <string>
#include <string_view>
#include <vector>

namespace strata::config {
namespace {

struct settings {
  std::uint64_t sample = 64, every = 1;
  bool on = false;
  std::string path, functions;
};

option_binder bound_to(settings& s) {
  option_binder b;
  b.add_uint("sample", s.sample, "64", "one in N", 1, 1000000)
      .add_uint("every", s.every, "1", "every K-th", 1)
      .add_bool("on", s.on, "0", "turns it on", "STRATA_OLD_ON")
      .add_string("path", s.path, nullptr, "a file")
      .add_list("functions", s.functions, "MPI_Send", "globs");
  return b;
}

std::string take(const option_binder& b, const std::vector<strata_module_arg>& args) {
  return b.take(args.data(), static_cast<int>(args.size()));
}

TEST(OptionBinder, DeclaresEachOptionOnceAsTheCoreReadsIt) {
  settings s;
  option_binder b = bound_to(s);
  const strata_module_options* d = b.declared();
  ASSERT_EQ(d->size, sizeof(strata_module_options));
  ASSERT_EQ(d->count, 5);
  EXPECT_STREQ(d->options[0].key, "sample");
  EXPECT_STREQ(d->options[0].type, "uint");
  EXPECT_STREQ(d->options[0].default_value, "64");
  EXPECT_STREQ(d->options[2].type, "bool");
  EXPECT_STREQ(d->options[2].env, "STRATA_OLD_ON");
  EXPECT_EQ(d->options[3].default_value, nullptr);
  EXPECT_STREQ(d->options[4].type, "list");
}

TEST(OptionBinder, TakesEachValueIntoItsField) {
  settings s;
  const option_binder b = bound_to(s);
  EXPECT_EQ(take(b, {{"sample", "1000000"},
                     {"every", "3"},
                     {"on", "yes"},
                     {"path", "/tmp/x y"},
                     {"functions", "MPI_Send+MPI_Recv"}}),
            "");
  EXPECT_EQ(s.sample, 1000000u);
  EXPECT_EQ(s.every, 3u);
  EXPECT_TRUE(s.on);
  EXPECT_EQ(s.path, "/tmp/x y");
  EXPECT_EQ(s.functions, "MPI_Send,MPI_Recv"); // '+' between names, as --tools needs
  EXPECT_EQ(take(b, {}), "");                  // nothing given: fields as they were
  EXPECT_EQ(s.sample, 1000000u);
}

TEST(OptionBinder, MalformedValuesGiveOneLineNamingOptionAndValue) {
  settings s;
  const option_binder b = bound_to(s);
  EXPECT_EQ(take(b, {{"sample", "0"}}), "option 'sample': '0' is not from 1 to 1000000");
  EXPECT_EQ(take(b, {{"sample", "1000001"}}),
            "option 'sample': '1000001' is not from 1 to 1000000");
  EXPECT_EQ(take(b, {{"every", "0"}}), "option 'every': '0' is not a whole number of at least 1");
  EXPECT_EQ(take(b, {{"every", "-1"}}), "option 'every': '-1' is not a whole number of at least 1");
  EXPECT_EQ(take(b, {{"every", "99999999999999999999999"}}),
            "option 'every': '99999999999999999999999' is not a whole number of at least 1");
  EXPECT_EQ(take(b, {{"on", "maybe"}}),
            "option 'on': 'maybe' is not 1, 0, true, false, yes, no, on or off");
  EXPECT_EQ(take(b, {{"colour", "red"}}), "unknown option 'colour'");
  EXPECT_EQ(take(b, {{nullptr, nullptr}}), "unknown option ''");
  // A bad value leaves its field as it was; the ones before it are taken.
  EXPECT_EQ(take(b, {{"every", "5"}, {"sample", "x"}}),
            "option 'sample': 'x' is not from 1 to 1000000");
  EXPECT_EQ(s.every, 5u);
  EXPECT_EQ(s.sample, 64u);
}

} // namespace
} // namespace strata::config
