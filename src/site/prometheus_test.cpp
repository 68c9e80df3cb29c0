#include "site/prometheus.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <string>

namespace strata::prometheus {
namespace {

TEST(Prometheus, WrittenTextReadsBackWithItsEscapes) {
  family g{"strata_x_seconds", "Time, with a \\ and a\nnew line", metric_type::gauge, {}};
  g.samples.push_back(
      {"strata_x_seconds", {{"job", "a\"b\\c\nd"}, {"routine", "MPI_Send"}}, 1.5, std::nullopt});
  g.samples.push_back({"strata_x_seconds", {{"job", "x"}}, NAN, 1700000000000});
  family h{"strata_h", "", metric_type::histogram, {}};
  for (const auto& [le, n] : {std::pair<std::string, double>{"0.5", 1}, {"1", 3}, {"+Inf", 4}})
    h.samples.push_back({"strata_h_bucket", {{"le", le}}, n, std::nullopt});
  h.samples.push_back({"strata_h_sum", {}, 2.5, std::nullopt});
  h.samples.push_back({"strata_h_count", {}, 4, std::nullopt});
  const std::string text = write_text({g, h, single("strata_up", "", metric_type::counter, 7)});
  EXPECT_NE(text.find("# HELP strata_x_seconds Time, with a \\\\ and a\\nnew line\n"),
            std::string::npos);
  EXPECT_NE(text.find("job=\"a\\\"b\\\\c\\nd\""), std::string::npos);
  const parse_result p = parse_text(text);
  ASSERT_TRUE(p.ok()) << p.error << "\n" << text;
  ASSERT_EQ(p.families.size(), 3u);
  EXPECT_EQ(p.families[0].help, "Time, with a \\ and a\nnew line");
  EXPECT_EQ(p.families[0].samples[0].labels[0].value, "a\"b\\c\nd");
  EXPECT_TRUE(std::isnan(p.families[0].samples[1].value));
  EXPECT_EQ(*p.families[0].samples[1].timestamp_ms, 1700000000000);
  EXPECT_EQ(p.families[1].type, metric_type::histogram);
  EXPECT_EQ(p.families[1].samples.size(), 5u);
  EXPECT_EQ(p.families[2].samples[0].value, 7);
}

TEST(Prometheus, EachBrokenRuleIsOneLineNamingIt) {
  const std::pair<const char*, const char*> cases[] = {
      {"a 1", "does not end with a newline"},
      {"1a 1\n", "is not a metric name"},
      {"a{b=\"x\" 1\n", "not separated by commas"},
      {"a{__b=\"x\"} 1\n", "is not a label name"},
      {"a{b=\"x\",b=\"y\"} 1\n", "label b twice"},
      {"a{b=\"\\x\"} 1\n", "is not an escape"},
      {"a one\n", "is not a value"},
      {"a 1\na 2\n", "appears twice"},
      {"a 1\nb 1\na{x=\"1\"} 1\n", "are not together"},
      {"a 1\n# TYPE a gauge\n", "comes after its samples"},
      {"# TYPE a gauge\n# TYPE a gauge\n", "a second TYPE"},
      {"# TYPE a meter\n", "is not a metric type"},
      {"# TYPE a counter\na -1\n", "is negative"},
      {"# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",
       "not cumulative"},
      {"# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_count 2\n", "no +Inf bucket"},
      {"# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 3\n", "is not the _count"},
      {"a 1 12x\n", "is not a timestamp"},
  };
  for (const auto& [text, why] : cases) {
    const parse_result p = parse_text(text);
    EXPECT_FALSE(p.ok()) << text;
    EXPECT_NE(p.error.find(why), std::string::npos) << text << " -> " << p.error;
    EXPECT_EQ(p.error.find('\n'), std::string::npos);
  }
  EXPECT_TRUE(parse_text("# a comment\n\na{b=\"1\",c=\"2\",} 3\n").ok());
  EXPECT_TRUE(parse_text("").ok());
}

} // namespace
} // namespace strata::prometheus
