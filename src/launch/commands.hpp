// `strata exec`, `run`, `modules` and `patch`: the tool stack around a program.
#pragma once

#include "common/wing_commands.hpp"

#include <memory>
#include <string>
#include <vector>

namespace strata::launch {

struct launch_options {
  std::string tools;
  std::string config;
  std::string mpi;
  int ranks = 0;
  bool skip_check = false;
  std::vector<std::string> program;
  double hang_after_s = 0;        // run: watch the job's hang states (0: no)
  std::string on_hang = "report"; // run: report, or abort the hung job
};

int exec_command(const launch_options& options);
int run_command(const launch_options& options);
// Every module found, or the one named (with its options).
int modules_command(const std::string& only_flavor, const std::string& only_name);
int patch_command(const std::string& in, const std::string& out);

// Registers exec, run, modules and patch on `strata`; `program` is what follows "--".
std::unique_ptr<cli::wing_commands> add_stack_commands(CLI::App& strata,
                                                       const std::vector<std::string>& program);

} // namespace strata::launch
