#include "config/option_binder.hpp"

#include <gtest/gtest.h>
#include <map>
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
            "option 'on': 'maybe' is not one of 1, 0, true, false, yes, no, on, off");
  EXPECT_EQ(take(b, {{"colour", "red"}}), "unknown option 'colour'");
  EXPECT_EQ(take(b, {{nullptr, nullptr}}), "unknown option ''");
  // A bad value leaves its field as it was; the ones before it are taken.
  EXPECT_EQ(take(b, {{"every", "5"}, {"sample", "x"}}),
            "option 'sample': 'x' is not from 1 to 1000000");
  EXPECT_EQ(s.every, 5u);
  EXPECT_EQ(s.sample, 64u);
}

// The types the profile, the trace and the monitor need, each bound to a field.
enum class mode { lean, exact, automatic };
struct typed {
  double start = 0, stop = -1, timeout = 0;
  std::uint64_t limit = 0, prefault = 0;
  mode polls = mode::exact;
  std::string transport, dir;
  std::vector<std::string> regions;
  int fanout = 0, level = 0;
  std::uint32_t sample = 0;
  std::map<std::string, std::string> passed;
};

option_binder typed_binder(typed& t) {
  option_binder b;
  b.add_duration("start", t.start, "0", "from")
      .add_duration("stop", t.stop, nullptr, "until")
      .add_duration("timeout", t.timeout, "60", "wait", 60)
      .add_size("limit", t.limit, "256M", "memory", 1)
      .add_size("prefault", t.prefault, "16M", "touched", 0, 1ull << 30)
      .add_enum("polls", t.polls, "lean", "how",
                {{"lean", mode::lean}, {"exact", mode::exact}, {"auto", mode::automatic}})
      .add_enum("transport", t.transport, "tree", "where", {"tree", "file", "inline"})
      .add_string("dir", t.dir, nullptr, "a directory")
      .not_empty()
      .add_list("regions", t.regions, nullptr, "globs")
      .add_uint("fanout", t.fanout, "2", "children", 2, 65536)
      .add_int("level", t.level, "5", "Pcontrol level", -10, 10)
      .add_uint("sample", t.sample, "64", "one in N", 1)
      .add_passed_on("bins", "uint", t.passed, "for a plug-in")
      .require_more("stop", "start", "later than");
  return b;
}

TEST(OptionBinder, EachFieldStartsFromItsDeclaredDefault) {
  typed t;
  const option_binder b = typed_binder(t);
  EXPECT_DOUBLE_EQ(t.start, 0);
  EXPECT_DOUBLE_EQ(t.stop, -1); // no default: the field as it was
  EXPECT_DOUBLE_EQ(t.timeout, 60);
  EXPECT_EQ(t.limit, 256u << 20);
  EXPECT_EQ(t.prefault, 16u << 20);
  EXPECT_EQ(t.polls, mode::lean);
  EXPECT_EQ(t.transport, "tree");
  EXPECT_EQ(t.fanout, 2);
  EXPECT_EQ(t.level, 5);
  EXPECT_EQ(t.sample, 64u);
  EXPECT_TRUE(t.passed.empty());
  EXPECT_EQ(b.take(std::vector<std::pair<std::string, std::string>>{}), "");
}

TEST(OptionBinder, DeclaresTheNewTypesAsTheCoreChecksThem) {
  typed t;
  option_binder b = typed_binder(t);
  const strata_module_options* d = b.declared();
  ASSERT_EQ(d->count, 13);
  std::map<std::string, std::string> type;
  for (int i = 0; i < d->count; ++i)
    type[d->options[i].key] = d->options[i].type;
  EXPECT_EQ(type["start"], "duration");
  EXPECT_EQ(type["limit"], "size");
  EXPECT_EQ(type["polls"], "enum:lean|exact|auto");
  EXPECT_EQ(type["transport"], "enum:tree|file|inline");
  EXPECT_EQ(type["regions"], "list");
  EXPECT_EQ(type["fanout"], "uint");
  EXPECT_EQ(type["level"], "int");
  EXPECT_EQ(type["bins"], "uint");
}

TEST(OptionBinder, TakesDurationsSizesEnumsAndNumbersAtTheirBounds) {
  typed t;
  const option_binder b = typed_binder(t);
  EXPECT_EQ(b.take({{"start", "500ms"},
                    {"stop", "10s"},
                    {"timeout", "1m"},
                    {"limit", "1"},
                    {"prefault", "1G"},
                    {"polls", "auto"},
                    {"transport", "inline"},
                    {"dir", "d"},
                    {"regions", "solver+io*,,"},
                    {"fanout", "65536"},
                    {"level", "-10"},
                    {"sample", "4294967295"},
                    {"bins", "7"}}),
            "");
  EXPECT_DOUBLE_EQ(t.start, 0.5);
  EXPECT_DOUBLE_EQ(t.stop, 10);
  EXPECT_DOUBLE_EQ(t.timeout, 60);
  EXPECT_EQ(t.limit, 1u);
  EXPECT_EQ(t.prefault, 1u << 30);
  EXPECT_EQ(t.polls, mode::automatic);
  EXPECT_EQ(t.transport, "inline");
  EXPECT_EQ(t.regions, (std::vector<std::string>{"solver", "io*"}));
  EXPECT_EQ(t.fanout, 65536);
  EXPECT_EQ(t.level, -10);
  EXPECT_EQ(t.sample, 4294967295u);
  EXPECT_EQ(t.passed.at("bins"), "7");
  EXPECT_EQ(b.take({{"start", "100ns"}, {"stop", "40us"}, {"prefault", "0"}, {"level", "10"}}), "");
  EXPECT_DOUBLE_EQ(t.start, 100e-9);
  EXPECT_DOUBLE_EQ(t.stop, 40e-6);
  EXPECT_EQ(t.prefault, 0u);
  EXPECT_EQ(t.level, 10);
}

TEST(OptionBinder, MalformedValuesOfTheNewTypesGiveOneLine) {
  typed t;
  const option_binder b = typed_binder(t);
  const std::vector<std::pair<std::pair<const char*, const char*>, std::string>> cases = {
      {{"start", "soon"},
       "option 'start': 'soon' is not a duration such as 2.5, 10s, 250ms or 40us"},
      {{"start", "-1s"}, "option 'start': '-1s' is not a duration such as 2.5, 10s, 250ms or 40us"},
      {{"start", "5 s"}, "option 'start': '5 s' is not a duration such as 2.5, 10s, 250ms or 40us"},
      {{"start", "1e999"},
       "option 'start': '1e999' is not a duration such as 2.5, 10s, 250ms or 40us"},
      {{"timeout", "60.001"}, "option 'timeout': '60.001' is not a duration up to 60 s"},
      {{"timeout", "2m"}, "option 'timeout': '2m' is not a duration up to 60 s"},
      {{"limit", "0"}, "option 'limit': '0' is not a size of at least 1 byte"},
      {{"limit", "64T"}, "option 'limit': '64T' is not a size such as 4096, 512K, 64M or 2G"},
      {{"limit", "-1"}, "option 'limit': '-1' is not a size such as 4096, 512K, 64M or 2G"},
      {{"limit", "99999999999G"},
       "option 'limit': '99999999999G' is not a size such as 4096, 512K, 64M or 2G"},
      {{"prefault", "1025M"},
       "option 'prefault': '1025M' is not a size from 0 to 1073741824 bytes"},
      {{"polls", "Lean"}, "option 'polls': 'Lean' is not one of lean,exact,auto"},
      {{"polls", ""}, "option 'polls': '' is not one of lean,exact,auto"},
      {{"transport", "udp"}, "option 'transport': 'udp' is not one of tree,file,inline"},
      {{"dir", ""}, "option 'dir': '' is empty"},
      {{"fanout", "1"}, "option 'fanout': '1' is not from 2 to 65536"},
      {{"fanout", "65537"}, "option 'fanout': '65537' is not from 2 to 65536"},
      {{"level", "11"}, "option 'level': '11' is not a whole number from -10 to 10"},
      {{"level", "1.5"}, "option 'level': '1.5' is not a whole number from -10 to 10"},
      {{"sample", "4294967296"}, "option 'sample': '4294967296' is not from 1 to 4294967295"},
      {{"bins", "many"}, "option 'bins': 'many' is not a whole number >= 0"},
      {{"stop", "0"}, "option 'stop': '0' is not later than option 'start' ('0')"},
  };
  for (const auto& [arg, message] : cases) {
    typed fresh;
    const option_binder one = typed_binder(fresh);
    EXPECT_EQ(one.take({{arg.first, arg.second}}), message) << arg.first << "=" << arg.second;
  }
  // Between two options: the later one given against the other's value, given or default.
  EXPECT_EQ(b.take({{"start", "2s"}, {"stop", "1500ms"}}),
            "option 'stop': '1500ms' is not later than option 'start' ('2s')");
  EXPECT_EQ(b.take({{"start", "1"}, {"stop", "1.5"}}), "");
}

TEST(OptionBinder, ADefaultItsOptionRefusesIsTheModulesOneLine) {
  std::uint64_t n = 0;
  option_binder b;
  b.add_uint("n", n, "0", "at least 1", 1);
  EXPECT_EQ(b.take(std::vector<std::pair<std::string, std::string>>{{"n", "3"}}),
            "default of option 'n': '0' is not a whole number of at least 1");
}

// An option that took whole milliseconds before it took durations (the profile's
// write_timeout_ms): a bare number is still milliseconds, a unit says what it says.
TEST(OptionBinder, DurationsWhoseBareNumberIsMilliseconds) {
  double timeout = -1, after = -1;
  option_binder b;
  b.add_duration_ms("write_timeout_ms", timeout, "10s", "how long", 1e-3, 1e6)
      .add_duration("hang_after", after, "0", "how long", 1e9);
  EXPECT_DOUBLE_EQ(timeout, 10);
  EXPECT_DOUBLE_EQ(after, 0);
  const std::vector<std::pair<const char*, double>> taken = {
      {"10000", 10}, {"1", 1e-3}, {"2.5", 2.5e-3},  {"250ms", 0.25},
      {"2s", 2},     {"1m", 60},  {"1000000s", 1e6}};
  for (const auto& [value, seconds] : taken) {
    EXPECT_EQ(b.take({{"write_timeout_ms", value}}), "") << value;
    EXPECT_DOUBLE_EQ(timeout, seconds) << value;
  }
  // A bare number of the seconds option stays seconds.
  EXPECT_EQ(b.take({{"hang_after", "90"}}), "");
  EXPECT_DOUBLE_EQ(after, 90);
  EXPECT_EQ(b.take({{"hang_after", "5m"}}), "");
  EXPECT_DOUBLE_EQ(after, 300);
  const std::vector<std::pair<std::pair<const char*, const char*>, std::string>> refused = {
      {{"write_timeout_ms", "0"},
       "option 'write_timeout_ms': '0' is not a duration from 0.001 to 1000000 s"},
      {{"write_timeout_ms", "0.5"},
       "option 'write_timeout_ms': '0.5' is not a duration from 0.001 to 1000000 s"},
      {{"write_timeout_ms", "500us"},
       "option 'write_timeout_ms': '500us' is not a duration from 0.001 to 1000000 s"},
      {{"write_timeout_ms", "12d"},
       "option 'write_timeout_ms': '12d' is not a duration such as 2.5, 10s, 250ms or 40us"},
      {{"write_timeout_ms", "10 s"},
       "option 'write_timeout_ms': '10 s' is not a duration such as 2.5, 10s, 250ms or 40us"},
      {{"write_timeout_ms", "-5"},
       "option 'write_timeout_ms': '-5' is not a duration such as 2.5, 10s, 250ms or 40us"},
      {{"write_timeout_ms", "1001000s"},
       "option 'write_timeout_ms': '1001000s' is not a duration from 0.001 to 1000000 s"},
      {{"hang_after", "1e10"}, "option 'hang_after': '1e10' is not a duration up to 1000000000 s"},
      {{"hang_after", "soon"},
       "option 'hang_after': 'soon' is not a duration such as 2.5, 10s, 250ms or 40us"},
  };
  for (const auto& [arg, message] : refused) {
    EXPECT_EQ(b.take({{arg.first, arg.second}}), message) << arg.first << "=" << arg.second;
  }
  // A refused value leaves the field as it was.
  EXPECT_DOUBLE_EQ(timeout, 1e6);
}

} // namespace
} // namespace strata::config
