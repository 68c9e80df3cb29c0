#pragma once

#include <string>
#include <vector>

namespace strata::cli {

struct launch_options {
  std::string tools;
  std::string config;
  std::string mpi;
  int ranks = 0;
  bool skip_check = false;
  std::vector<std::string> program;
};

int exec_command(const launch_options& options);
int run_command(const launch_options& options);
// Every module found, or the one named (with its options).
int modules_command(const std::string& only_flavor, const std::string& only_name);
int patch_command(const std::string& in, const std::string& out);
int report_command(const std::string& record, const std::string& format, const std::string& model);
int recover_command(const std::vector<std::string>& spools);

} // namespace strata::cli
