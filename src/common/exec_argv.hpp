// The argv that exec and posix_spawn take, from strings: every wing that starts a process
// (the launcher, the parallel analyzer, the bench command, the interpreter probe, the mailer).
#pragma once

#include <string>
#include <vector>

namespace strata {

// Pointers into the strings, ending with a null pointer (valid while `args` lives unchanged).
inline std::vector<char*> exec_argv(std::vector<std::string>& args) {
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

} // namespace strata
