// The Prometheus text exposition format (version 0.0.4), written and read: what `strata site
// serve` and `strata monitor serve` answer on /metrics. MPI-free and store-free (library
// strata_prometheus), so that any command can use it. The reader checks the format's rules
// (names, labels and their escapes, one HELP and TYPE per family before its samples, families
// not interleaved, no series twice, counters not negative, histogram buckets cumulative up to
// le="+Inf" equal to _count) and says what breaks one in one line; the tests read the writers'
// output with it, and fuzz/prometheus_fuzz.cpp feeds it anything.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::prometheus {

enum class metric_type { counter, gauge, histogram, summary, untyped };

struct label {
  std::string name, value;
};

// One line: the sample's full name (a histogram's name_bucket, name_sum, name_count).
struct sample {
  std::string name;
  std::vector<label> labels;
  double value = 0;
  std::optional<std::int64_t> timestamp_ms;
};

struct family {
  std::string name, help;
  metric_type type = metric_type::untyped;
  std::vector<sample> samples;
};

// The text of the families, in order; a family's samples in the order given. Label values and
// help texts are escaped as the format requires.
std::string write_text(const std::vector<family>& families);

struct parse_result {
  std::vector<family> families;
  std::string error; // "line N: ..." when the text breaks a rule
  bool ok() const { return error.empty(); }
};
parse_result parse_text(std::string_view text);

bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);
std::string_view type_name(metric_type t);

// A family of one sample without labels: the common case of a health figure.
family single(std::string name, std::string help, metric_type type, double value);

} // namespace strata::prometheus
