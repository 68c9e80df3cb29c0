// What `strata exec` and `strata run` decide before starting a program: which MPI it uses,
// where the matching core lives, and the launcher command line. No MPI here.
#pragma once

#include "common/elf_dynamic.hpp"

#include <string>
#include <utility>
#include <vector>

namespace strata::launch {

// ELF reading is common's (the core reads ELF files too); the launcher's own code names it so.
using common::elf_dynamic;
using common::flavor_of_libraries;
using common::flavor_of_library;
using common::read_elf_dynamic;

// Why the tools cannot see a program's MPI calls when the core is preloaded, as a sentence
// about `path`; "" when they can (or the file is no ELF file, a script). Statically linked
// programs, and programs with their MPI library linked in without Strata ahead of it.
std::string unobservable_program(const std::string& path);

// The MPI flavor a program is linked against, from its DT_NEEDED entries; "" when none.
std::string flavor_of_program(const std::string& path, std::string& error);

// The flavor implied by the launcher's environment (Open MPI's OMPI_* or Hydra's PMI_*).
std::string flavor_of_launcher(const char* (*getenv)(const char*));

// Absolute path of PROG: as given if it contains '/', else searched on PATH. "" if not found.
std::string resolve_program(const std::string& prog, const char* path_env);

// The installation, found from the strata executable: <prefix>/bin/strata.
struct layout {
  std::string prefix;
  std::string core_library(const std::string& flavor) const {
    return prefix + "/lib/strata/" + flavor + "/libstrata.so";
  }
  std::string module_dir(const std::string& flavor) const {
    return prefix + "/lib/strata/" + flavor + "/modules";
  }
  // The `strata` Python package (annotations) lives in <this>/strata.
  std::string python_dir() const { return prefix + "/lib/strata/python"; }
  // The MPI flavors this installation has a core for, of "openmpi" and "mpich".
  std::vector<std::string> flavors() const;
  // "" when it has a core for `flavor`; else why not, as the end of a sentence ("this Strata
  // (PREFIX) was built without mpich (it has openmpi): ...").
  std::string missing_flavor(const std::string& flavor) const;
};
layout find_layout(const std::string& self_exe);

// mpirun command for a local run: the flavor's launcher and what a run on one machine needs.
std::vector<std::string> launcher_command(const std::string& flavor, int ranks, bool as_root,
                                          int cores);

// The launcher command for a job on this machine (run as this user, on these cores), with the
// environment the launch needs set in this process.
std::vector<std::string> local_launch(const std::string& flavor, int ranks);

// The launcher's arguments that give the ranks, and not the launcher itself, NAME=VALUE in
// their environment: Open MPI's `-x NAME=VALUE`, MPICH's `-genv NAME VALUE`.
std::vector<std::string> rank_environment(const std::string& flavor, const std::string& name,
                                          const std::string& value);

// How a job's processes wait when a module's tool ranks come on top of the application's:
// what to set in the launcher's environment and one line that says what was done.
//
// Open MPI makes every process yield the core whenever it waits (mpi_yield_when_idle) once the
// job has more processes than the node has cores; with the application's ranks on a full machine
// the tool ranks alone would cause that, and yielding ranks spend most of a wait in the kernel
// (HPCC: 3.6x native, most of it system time). So when the application alone fits the cores,
// the application's ranks keep the busy polling they would have without Strata, and only the
// tool ranks (world ranks from `tool_ranks_from` on, which `strata exec` recognises) yield; they
// sleep between probes in any case. MPICH's ranks wait the same way oversubscribed or not.
// Why a job of `processes` processes is too large to start on this machine alone (`cores`
// cores), or "" when it is not: at most 64 processes a core, and none over the user's process
// limit (`process_limit`, RLIMIT_NPROC; 0 when unlimited). Inside a batch allocation
// (`getenv` finds Slurm's, PBS's, LSF's or Flux's job) the launcher spreads them over its nodes
// and no limit is applied here.
std::string too_many_processes(int processes, int cores, long process_limit,
                               const char* (*getenv)(const char*));

struct wait_plan {
  std::vector<std::pair<std::string, std::string>> environment; // to set for the launcher
  std::string announcement;                                     // "" when there are no tool ranks
};
wait_plan plan_waits(const std::string& flavor, int app_ranks, int tool_ranks, int cores,
                     const char* user_yield_setting);

// The variable that tells `strata exec` which world ranks are tool ranks, and the setting
// a tool rank then gets ("" when the rank is the application's or nothing was planned).
inline constexpr const char* tool_ranks_variable = "STRATA_TOOL_RANKS_FROM";
std::vector<std::pair<std::string, std::string>>
tool_rank_environment(const char* (*getenv)(const char*));

// The running executable (/proc/self/exe), or "strata" when it cannot be read.
std::string self_executable();

// LD_PRELOAD with `library` first, keeping what was there.
std::string preload_value(const std::string& library, const char* existing);

// PYTHONPATH with `dir` last, after what was there (the user's own packages come first).
std::string python_path_value(const std::string& dir, const char* existing);

} // namespace strata::launch
