// strata_spank.so: Strata for every job of a Slurm site, enabled by one line in plugstack.conf
// (docs/slurm.md). It adds --strata=STACK|off to srun, sbatch and salloc, and in each task of a
// job step decides from the executable whether it is an MPI program the core can be preloaded
// into, and for which MPI (src/slurm/task_setup.hpp); a batch script or salloc's shell gets the
// job's stack in its environment and Strata's mpirun wrappers first on its PATH, so that mpirun
// inside the job covers its ranks too. Plugin arguments: default=STACK (the site's stack for
// jobs that do not say), prefix=DIR (the installation; default: found from this file).
#include "launch/launch.hpp"
#include "slurm/step_facts.hpp"
#include "slurm/task_setup.hpp"

// spank.h declares the plugin's entry points (slurm_spank_init, ...) outside its extern "C".
extern "C" {
#include <slurm/spank.h>
}
#include <slurm/slurm_version.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

// SPANK_PLUGIN(strata, 1), with the external linkage C++ does not give a const by itself:
// Slurm loads only a plugin built against its own version.
extern "C" {
extern const char plugin_name[];
extern const char plugin_type[];
extern const unsigned int plugin_version;
extern const unsigned int spank_plugin_version;
const char plugin_name[] = "strata";
const char plugin_type[] = "spank";
const unsigned int plugin_version = SLURM_VERSION_NUMBER;
const unsigned int spank_plugin_version = 1;
}

namespace {

using strata::slurm::stack_off;
using strata::slurm::stack_variable;

constexpr std::uint32_t batch_step = 0xfffffffbU;       // SLURM_BATCH_SCRIPT
constexpr std::uint32_t interactive_step = 0xfffffffaU; // SLURM_INTERACTIVE_STEP

// What this process knows of the job's choice: the option's value when it was given here.
std::string g_option;
bool g_option_given = false;
std::string g_default; // default=STACK
std::string g_prefix;  // prefix=DIR
strata::slurm::step_facts g_facts;

// A bad value: one line naming it and the problem on the user's terminal (srun, sbatch and salloc
// print it as "srun: error: strata: --strata=..."), and -1, on which Slurm adds its own "Invalid
// --strata argument" line and starts nothing (docs/slurm.md).
int take_option(int /*val*/, const char* optarg, int remote) {
  const std::string value = optarg != nullptr ? optarg : "";
  if (std::string why = strata::slurm::stack_problem(value); !why.empty()) {
    constexpr std::string_view origin = "--strata: "; // the tool list's parser names it too
    if (why.starts_with(origin))
      why.erase(0, origin.size());
    if (remote == 0)
      slurm_error("strata: --strata=%s: %s", value.c_str(), why.c_str());
    return -1;
  }
  g_option = value;
  g_option_given = true;
  return 0;
}

spank_option strata_option = {
    const_cast<char*>("strata"),
    const_cast<char*>("STACK|off"),
    const_cast<char*>("Strata's tools for the MPI programs of this job (e.g. profile), or off"),
    1,
    0,
    take_option};

void read_arguments(int argc, char** argv) {
  const strata::slurm::plugin_arguments args =
      strata::slurm::parse_plugin_arguments(std::vector<std::string>(argv, argv + argc));
  g_default = args.default_stack;
  g_prefix = args.prefix;
  for (const std::string& error : args.errors)
    slurm_error("%s", error.c_str());
}

// The installation: prefix=, else the one this file lies in (PREFIX/lib/strata/slurm/).
strata::launch::layout installation() {
  if (!g_prefix.empty())
    return strata::launch::layout{g_prefix};
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&read_arguments), &info) != 0 && info.dli_fname != nullptr) {
    std::string dir = info.dli_fname;
    for (int up = 0; up < 4 && !dir.empty(); ++up)
      dir = dir.substr(0, dir.rfind('/'));
    return strata::launch::layout{dir.empty() ? std::string("/") : dir};
  }
  return strata::launch::layout{"/usr/local"};
}

std::string task_variable(spank_t sp, const char* name, bool& found) {
  char buf[4096];
  found = spank_getenv(sp, name, buf, sizeof(buf)) == ESPANK_SUCCESS;
  return found ? std::string(buf) : std::string();
}

// The job's stack as this task sees it: --strata given to this step, else what the batch script
// (or salloc's shell) carries, else the site default; "" means the site's etc/strata file.
std::string chosen_stack(spank_t sp) {
  if (g_option_given)
    return g_option;
  bool found = false;
  std::string carried = task_variable(sp, stack_variable, found);
  if (found && (carried == stack_off || strata::slurm::stack_problem(carried).empty()))
    return carried;
  return g_default;
}

// The task's environment, read through spank_getenv for plan_task's getenv.
spank_t g_task = nullptr;
const char* task_getenv(const char* name) {
  static thread_local std::string value;
  bool found = false;
  value = task_variable(g_task, name, found);
  return found ? value.c_str() : nullptr;
}

// A batch script or salloc's shell: the job's stack for what it starts, and the mpirun wrappers.
void prepare_job_shell(spank_t sp, const std::string& stack, const strata::launch::layout& where) {
  bool found = false;
  if (task_variable(sp, "STRATA_DISABLE", found) == "1")
    return;
  spank_setenv(sp, stack_variable, stack.empty() ? "" : stack.c_str(), 1);
  if (stack == stack_off)
    return;
  const std::string wrappers = where.prefix + "/lib/strata/slurm/bin";
  const std::string path = task_variable(sp, "PATH", found);
  spank_setenv(sp, "PATH", (wrappers + (found ? ":" + path : std::string())).c_str(), 1);
}

// The job's facts from slurmctld (none when the job runs without Strata: user_init loads them
// only then) into the task's environment.
void export_job_facts(spank_t sp) {
  for (const auto& [name, value] : g_facts.environment())
    spank_setenv(sp, name.c_str(), value.c_str(), 1);
}

} // namespace

extern "C" {

int slurm_spank_init(spank_t sp, int argc, char** argv) {
  read_arguments(argc, argv);
  const spank_context_t context = spank_context();
  if (context == S_CTX_LOCAL || context == S_CTX_ALLOCATOR || context == S_CTX_REMOTE)
    if (spank_option_register(sp, &strata_option) != ESPANK_SUCCESS)
      slurm_error("strata: cannot register --strata");
  return 0;
}

// salloc: its shell (or command) inherits this process's environment.
int slurm_spank_init_post_opt(spank_t sp, int /*argc*/, char** /*argv*/) {
  if (spank_context() != S_CTX_ALLOCATOR || !g_option_given)
    return 0;
  if (const char* disabled = std::getenv("STRATA_DISABLE");
      disabled != nullptr && std::string(disabled) == "1")
    return 0;
  ::setenv(stack_variable, g_option.c_str(), 1);
  if (g_option != stack_off) {
    const std::string wrappers = installation().prefix + "/lib/strata/slurm/bin";
    const char* path = std::getenv("PATH");
    ::setenv("PATH", (wrappers + (path != nullptr ? std::string(":") + path : "")).c_str(), 1);
  }
  (void)sp;
  return 0;
}

// Once per step and node, in slurmstepd as the user: the job's facts the tasks' environment
// lacks (account, QOS, time limit), from slurmctld.
int slurm_spank_user_init(spank_t sp, int /*argc*/, char** /*argv*/) {
  if (spank_remote(sp) != 1 || chosen_stack(sp) == stack_off)
    return 0;
  bool found = false;
  if (task_variable(sp, "STRATA_DISABLE", found) == "1")
    return 0;
  std::uint32_t job = 0;
  std::uint32_t step = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) == ESPANK_SUCCESS &&
      spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS)
    g_facts = strata::slurm::load_step_facts(job, step);
  return 0;
}

int slurm_spank_task_init(spank_t sp, int /*argc*/, char** /*argv*/) {
  if (spank_remote(sp) != 1)
    return 0;
  const std::string stack = chosen_stack(sp);
  const strata::launch::layout where = installation();
  std::uint32_t step = 0;
  if (spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS &&
      (step == batch_step || step == interactive_step)) {
    prepare_job_shell(sp, stack, where);
    // What mpirun starts from this shell runs in no task of its own: its ranks read the job's
    // facts (account, QOS, time limit...) from the shell's environment.
    export_job_facts(sp);
    return 0;
  }
  int argc = 0;
  char** argv = nullptr;
  if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1)
    return 0;
  g_task = sp;
  bool found = false;
  const std::string path = task_variable(sp, "PATH", found);
  const strata::slurm::task_setup setup =
      strata::slurm::plan_task(argv[0], found ? path.c_str() : nullptr, stack, where, task_getenv);
  g_task = nullptr;
  for (const auto& [name, value] : setup.environment)
    spank_setenv(sp, name.c_str(), value.c_str(), 1);
  if (!setup.environment.empty())
    export_job_facts(sp);
  return 0;
}

} // extern "C"
