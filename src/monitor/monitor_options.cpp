#include "monitor/monitor_options.hpp"

#include "config/options.hpp"

#include <cerrno>
#include <cstdlib>

namespace strata::monitor {

namespace {
bool to_long(const char* text, long lo, long hi, long& out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v < lo || v > hi)
    return false;
  out = v;
  return true;
}

bool to_seconds(const char* text, double most, double& out) {
  const auto v = config::parse_duration(text);
  if (!v || *v > most)
    return false;
  out = *v;
  return true;
}
} // namespace

std::string parse_options(const std::function<const char*(const char*)>& lookup, options& o) {
  long n = 0;
  if (const char* v = lookup("transport")) {
    o.transport = v;
    if (o.transport != "tree" && o.transport != "file" && o.transport != "inline")
      return "transport: '" + o.transport + "' is not one of tree, file, inline";
  }
  if (const char* v = lookup("fanout")) {
    if (!to_long(v, 2, 65536, n))
      return std::string("fanout: '") + v + "' is not a whole number from 2 to 65536";
    o.fanout = static_cast<int>(n);
  }
  if (const char* v = lookup("ranks")) {
    if (!to_long(v, 0, 1 << 24, n))
      return std::string("ranks: '") + v + "' is not a number of application ranks";
    o.ranks = static_cast<int>(n);
  }
  if (const char* v = lookup("period")) {
    if (!to_seconds(v, 1e6, o.period_s))
      return std::string("period: '") + v +
             "' is not a duration up to 1e6 s (0 = no periodic offload)";
  }
  if (const char* v = lookup("filter"))
    o.filter = v;
  for (const char* key : {"bins", "metric", "class-events"})
    if (const char* v = lookup(key))
      o.filter_options[key] = v;
  if (const char* v = lookup("policy")) {
    o.policy = v;
    if (o.policy != "drop" && o.policy != "block")
      return "policy: '" + o.policy + "' is not drop or block";
  }
  if (const char* v = lookup("buffers")) {
    if (!to_long(v, 1, 1024, n))
      return std::string("buffers: '") + v + "' is not a number from 1 to 1024";
    o.buffers = static_cast<int>(n);
  }
  if (const char* v = lookup("pcontrol")) {
    if (!to_long(v, -1000000, 1000000, n))
      return std::string("pcontrol: '") + v + "' is not a level";
    o.pcontrol_level = static_cast<int>(n);
  }
  if (const char* v = lookup("dir"))
    o.dir = v;
  if (const char* v = lookup("out"))
    o.out = v;
  if (const char* v = lookup("timeout")) {
    if (!to_seconds(v, 1e6, o.timeout_s))
      return std::string("timeout: '") + v + "' is not a duration up to 1e6 s";
  }
  if (const char* v = lookup("node-delay")) {
    if (!to_seconds(v, 60, o.node_delay_s))
      return std::string("node-delay: '") + v + "' is not a duration up to 60 s";
  }
  std::string error;
  if (overlay::make_filter(o.filter, o.filter_options, error) == nullptr)
    return "filter: " + error;
  return {};
}

} // namespace strata::monitor
