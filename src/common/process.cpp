#include "common/process.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <string>

namespace strata::common {

bool process_runs(int64_t pid) {
  if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM))
    return false;
  std::string stat;
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  if (FILE* f = std::fopen(path.c_str(), "r")) {
    char buf[512];
    const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    stat.assign(buf, n);
  }
  // "PID (COMM) STATE ...": COMM may hold parentheses, the state follows the last one.
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'Z';
}

} // namespace strata::common
