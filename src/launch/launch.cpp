#include "launch/launch.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>

namespace strata::launch {

std::string unobservable_program(const std::string& path) {
  const elf_dynamic elf = read_elf_dynamic(path);
  if (elf.defines_strata)
    return {};
  const std::string relink = "relink it with -lstrata ahead of the MPI library (README.md)";
  if (elf.statically_linked)
    return path + " is statically linked: the core cannot be preloaded into it; " + relink;
  if (elf.error.empty() && (elf.defines_mpi_start || elf.carries_mpi_library))
    return path + " has its MPI library linked in (" +
           (elf.defines_mpi_start ? "it defines MPI_Init itself"
                                  : "stripped, its data holds MPI's own messages") +
           "): its calls never reach the preloaded core; " + relink;
  return {};
}

std::string flavor_of_program(const std::string& path, std::string& error) {
  const elf_dynamic elf = read_elf_dynamic(path);
  if (!elf.error.empty()) {
    error = elf.error;
    return {};
  }
  std::string flavor = flavor_of_libraries(elf.libraries);
  if (flavor.empty())
    error = path + " is not linked against Open MPI or MPICH";
  return flavor;
}

std::string flavor_of_launcher(const char* (*getenv)(const char*)) {
  if (getenv("OMPI_COMM_WORLD_SIZE") != nullptr)
    return "openmpi";
  if (getenv("PMI_RANK") != nullptr || getenv("PMI_SIZE") != nullptr)
    return "mpich";
  return {};
}

std::string resolve_program(const std::string& prog, const char* path_env) {
  if (prog.empty())
    return {};
  if (prog.find('/') != std::string::npos)
    return ::access(prog.c_str(), X_OK) == 0 ? prog : std::string();
  std::stringstream dirs(path_env != nullptr ? path_env : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + prog;
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return {};
}

layout find_layout(const std::string& self_exe) {
  layout l;
  std::string dir = self_exe.substr(0, self_exe.rfind('/')); // <prefix>/bin
  l.prefix = dir.substr(0, dir.rfind('/'));                  // <prefix>
  if (l.prefix.empty())
    l.prefix = "/";
  return l;
}

std::vector<std::string> layout::flavors() const {
  std::vector<std::string> found;
  for (const char* flavor : {"openmpi", "mpich"})
    if (::access(core_library(flavor).c_str(), R_OK) == 0)
      found.emplace_back(flavor);
  return found;
}

std::string layout::missing_flavor(const std::string& flavor) const {
  const std::vector<std::string> have = flavors();
  if (std::find(have.begin(), have.end(), flavor) != have.end())
    return {};
  std::string listed;
  for (const std::string& f : have)
    listed += (listed.empty() ? "" : " and ") + f;
  return "this Strata (" + prefix + ") was built without " + flavor + " (it has " +
         (listed.empty() ? std::string("no MPI flavor") : listed) + "): build Strata where mpicc." +
         flavor + " is found, or install its " + flavor + " part";
}

std::vector<std::string> launcher_command(const std::string& flavor, int ranks, bool as_root,
                                          int cores) {
  std::vector<std::string> cmd{"mpirun." + flavor};
  if (flavor == "openmpi") {
    if (as_root)
      cmd.emplace_back("--allow-run-as-root");
    if (ranks > cores)
      cmd.emplace_back("--oversubscribe");
  }
  cmd.emplace_back("-np");
  cmd.push_back(std::to_string(ranks));
  return cmd;
}

std::vector<std::string> local_launch(const std::string& flavor, int ranks) {
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  // Shared-memory single copy (CMA) is refused inside containers; copying through the shared
  // segment works everywhere.
  if (flavor == "openmpi")
    ::setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
  return launcher_command(flavor, ranks, ::geteuid() == 0, static_cast<int>(cores));
}

std::vector<std::string> rank_environment(const std::string& flavor, const std::string& name,
                                          const std::string& value) {
  if (flavor == "openmpi")
    return {"-x", name + "=" + value};
  return {"-genv", name, value};
}

std::string too_many_processes(int processes, int cores, long process_limit,
                               const char* (*getenv)(const char*)) {
  for (const char* job : {"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "FLUX_JOB_ID"})
    if (const char* id = getenv(job); id != nullptr && id[0] != '\0')
      return {};
  constexpr long per_core = 64;
  const long cap = per_core * std::max(cores, 1);
  const std::string job = std::to_string(processes) + " processes";
  const std::string elsewhere =
      "; start a larger job through a batch system, or with mpirun -np N strata exec ...";
  if (processes > cap)
    return job + " on this machine's " + std::to_string(cores) + " core" + (cores == 1 ? "" : "s") +
           " (at most " + std::to_string(cap) + ", " + std::to_string(per_core) +
           " a core, in a job on one machine)" + elsewhere;
  if (process_limit > 0 && processes > process_limit)
    return job + " over this user's process limit (" + std::to_string(process_limit) +
           ", ulimit -u)" + elsewhere;
  return {};
}

namespace {
constexpr const char* ompi_yield = "OMPI_MCA_mpi_yield_when_idle";

std::string ranks_text(int n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}
} // namespace

wait_plan plan_waits(const std::string& flavor, int app_ranks, int tool_ranks, int cores,
                     const char* user_yield_setting) {
  wait_plan plan;
  if (tool_ranks <= 0)
    return plan;
  const std::string job = ranks_text(app_ranks, "application rank") + " + " +
                          ranks_text(tool_ranks, "tool rank") + " on " + ranks_text(cores, "core") +
                          ": ";
  const std::string sleepers = "the tool ranks sleep between probes";
  if (flavor != "openmpi") {
    plan.announcement = job + "MPICH's ranks wait as they would without Strata; " + sleepers;
  } else if (app_ranks + tool_ranks <= cores) {
    plan.announcement = job + "no core shared; " + sleepers;
  } else if (user_yield_setting != nullptr) {
    plan.announcement = job + ompi_yield + "=" + user_yield_setting + " left as set; " + sleepers;
  } else if (app_ranks > cores) {
    plan.announcement =
        job +
        "the application alone oversubscribes the cores, so its ranks yield when idle as "
        "they would without Strata; " +
        sleepers;
  } else {
    plan.environment = {{ompi_yield, "0"}, {tool_ranks_variable, std::to_string(app_ranks)}};
    plan.announcement = job + "the application's ranks keep Open MPI's busy polling (" +
                        ompi_yield + "=0), only the tool ranks yield when idle; " + sleepers;
  }
  return plan;
}

std::vector<std::pair<std::string, std::string>>
tool_rank_environment(const char* (*getenv)(const char*)) {
  const char* from = getenv(tool_ranks_variable);
  const char* rank = getenv("OMPI_COMM_WORLD_RANK");
  if (from == nullptr || rank == nullptr)
    return {};
  char* end = nullptr;
  const long first_tool = std::strtol(from, &end, 10);
  if (end == from || *end != '\0')
    return {};
  const long world_rank = std::strtol(rank, &end, 10);
  if (end == rank || *end != '\0' || world_rank < first_tool)
    return {};
  return {{ompi_yield, "1"}};
}

std::string self_executable() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("strata");
}

std::string preload_value(const std::string& library, const char* existing) {
  if (existing == nullptr || existing[0] == '\0')
    return library;
  return library + ":" + existing;
}

std::string python_path_value(const std::string& dir, const char* existing) {
  if (existing == nullptr || existing[0] == '\0')
    return dir;
  return std::string(existing) + ":" + dir;
}

} // namespace strata::launch
