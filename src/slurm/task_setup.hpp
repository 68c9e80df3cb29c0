// What Strata's Slurm integration does to one task: whether the program is an MPI program the
// core can be preloaded into, and then the environment that `strata run` would give its ranks.
// Shared by the SPANK plugin (every task of a job step) and `strata slurm launcher-options`
// (mpirun inside a job). No Slurm and no MPI here.
#pragma once

#include "launch/launch.hpp"

#include <string>
#include <utility>
#include <vector>

namespace strata::slurm {

// The stack a job asks for: "off" (or empty with no site default) leaves every task alone.
inline constexpr const char* stack_off = "off";

// The variable that carries a job's stack from its batch script (or salloc's shell) to the job
// steps and mpirun started inside it: "off" or a tool list.
inline constexpr const char* stack_variable = "STRATA_SLURM_STACK";

struct task_setup {
  std::string flavor;                                           // "" when left alone
  std::vector<std::pair<std::string, std::string>> environment; // to set in the task
  std::string left_alone;                                       // why nothing is set, or ""
};

// `program` as the task runs it (argv[0]), found on `path_env`; `stack` the job's ("" for the
// site's own default, etc/strata/strata.conf, when the installation has one); `getenv` reads
// the task's environment (STRATA_DISABLE, LD_PRELOAD). Only dynamically linked ELF programs
// that need Open MPI's or MPICH's library and whose calls a preloaded core sees are set up:
// scripts, interpreters, static binaries and programs without MPI run as they are.
task_setup plan_task(const std::string& program, const char* path_env, const std::string& stack,
                     const launch::layout& installation, const char* (*getenv)(const char*));

// Why a stack given as `--strata=TEXT` cannot be used ("" when it can): not a tool list.
std::string stack_problem(const std::string& text);

// The plugin's arguments in plugstack.conf: default=STACK and prefix=DIR, the last of each
// winning. `errors` has one message per argument that is neither (named, with the ones there
// are) and for a default whose stack does not parse (then there is no site default).
struct plugin_arguments {
  std::string default_stack, prefix;
  std::vector<std::string> errors;
};
plugin_arguments parse_plugin_arguments(const std::vector<std::string>& args);

// The launcher arguments (Open MPI's `-x`, MPICH's `-genv`) that hand the ranks of
// `mpirun ARGS` what plan_task gives their program: the first argument that names an
// executable file is taken for the program. Empty when the program is left alone.
std::vector<std::string> launcher_options(const std::vector<std::string>& mpirun_args,
                                          const char* path_env, const std::string& stack,
                                          const launch::layout& installation,
                                          const char* (*getenv)(const char*));

} // namespace strata::slurm
