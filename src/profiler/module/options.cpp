#include "options.hpp"

#include <cstdlib>
#include <cstring>

namespace strata::profiler::options {

namespace {
const char* set_and_not_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? v : nullptr;
}
} // namespace

bool callsites() {
  const char* v = set_and_not_empty("STRATA_PROFILE_CALLSITES");
  return v != nullptr && std::strcmp(v, "0") != 0;
}

const char* counters() {
  return set_and_not_empty("STRATA_COUNTERS");
}

const char* spool() {
  return std::getenv("STRATA_SPOOL");
}

const char* record_copy() {
  return set_and_not_empty("STRATA_PROFILE_JSON");
}

const char* report() {
  return set_and_not_empty("STRATA_PROFILE_OUT");
}

const char* machine_model() {
  return set_and_not_empty("STRATA_MODEL");
}

bool lean_polls(std::vector<std::string>& problems) {
  const char* polls = set_and_not_empty("STRATA_PROFILE_POLLS");
  if (polls == nullptr || std::strcmp(polls, "lean") == 0)
    return true;
  if (std::strcmp(polls, "exact") == 0)
    return false;
  problems.emplace_back("STRATA_PROFILE_POLLS is neither 'lean' nor 'exact'; counting polls lean");
  return true;
}

uint32_t poll_sample_interval(std::vector<std::string>& problems) {
  const char* v = set_and_not_empty("STRATA_PROFILE_POLL_SAMPLE");
  if (v == nullptr)
    return 64;
  char* end = nullptr;
  const unsigned long n = std::strtoul(v, &end, 10);
  if (*end == '\0' && n >= 1 && n <= 1000000)
    return static_cast<uint32_t>(n);
  problems.emplace_back(
      "STRATA_PROFILE_POLL_SAMPLE is not a number from 1 to 1000000; timing one poll in 64");
  return 64;
}

std::chrono::milliseconds write_timeout() {
  const char* v = std::getenv("STRATA_WRITE_TIMEOUT_MS");
  const long ms = v != nullptr ? std::strtol(v, nullptr, 10) : 0;
  return std::chrono::milliseconds(ms > 0 ? ms : 10000);
}

} // namespace strata::profiler::options
