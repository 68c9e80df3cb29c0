#include "launch/commands.hpp"
#include "common/exec_argv.hpp"
#include "launch/hang_run.hpp"

#include "config/config.hpp"
#include "config/options.hpp"
#include "core/probe.h"
#include "hang/commands.hpp"
#include "launch/interpreter.hpp"
#include "launch/launch.hpp"
#include "launch/launcher_child.hpp"
#include "strata/patch/patch.hpp"

#include <CLI/CLI.hpp>

#include <dirent.h>
#include <dlfcn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

namespace strata::launch {
namespace {

const char* env(const char* name) {
  return std::getenv(name);
}

void error_line(const std::string& message) {
  std::fprintf(stderr, "strata: %s\n", message.c_str());
}

// Under a launcher every rank runs `strata exec`; only the first one reports.
bool first_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char* v = env(var))
      return std::string(v) == "0";
  return true;
}

std::string absolute(const std::string& path) {
  if (path.empty() || path[0] == '/')
    return path;
  char cwd[PATH_MAX];
  return ::getcwd(cwd, sizeof(cwd)) != nullptr ? std::string(cwd) + "/" + path : path;
}

// The loaded core of one flavor, for probing modules with the code MPI_Init uses.
struct core_handle {
  void* handle = nullptr;
  strata_probe_fn probe = nullptr;
  std::string error;
};

core_handle open_core(const std::string& library) {
  core_handle core;
  if (::access(library.c_str(), R_OK) != 0) {
    core.error = "no Strata core at " + library + " (was Strata built for this MPI?)";
    return core;
  }
  // Global: a patched PMPI tool imports the core's ZMPI_ functions by name, as in the program.
  core.handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (core.handle != nullptr)
    core.probe = reinterpret_cast<strata_probe_fn>(::dlsym(core.handle, "strata_core_probe"));
  if (core.probe == nullptr) {
    const char* why = ::dlerror();
    core.error = "cannot load " + library + ": " + (why != nullptr ? why : "no probe entry");
  }
  return core;
}

std::string probe_spec(const core_handle& core, const config::module_spec& spec, strata_probe& out,
                       int app_ranks = 0) {
  std::vector<const char*> keys;
  std::vector<const char*> values;
  for (const auto& [k, v] : spec.args) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  core.probe(spec.name.c_str(), spec.origin.c_str(), static_cast<int>(keys.size()), keys.data(),
             values.data(), app_ranks, &out);
  return out.error;
}

// The stack this launch asks for, with --tools / --config applied to the environment that the
// program will inherit.
config::stack apply_stack_options(const launch_options& o) {
  if (!o.config.empty()) {
    ::setenv("STRATA_CONFIG", absolute(o.config).c_str(), 1);
    ::unsetenv("STRATA_TOOLS");
  }
  if (!o.tools.empty())
    ::setenv("STRATA_TOOLS", o.tools.c_str(), 1);
  config::stack selected = config::select_stack(
      env, launch::find_layout(launch::self_executable()).prefix + "/etc/strata/strata.conf");
  // STRATA_DISABLE=1 wins over --tools, as it does in the ranks: no module, no tool rank.
  if (o.tools.empty() || selected.origin == "STRATA_DISABLE")
    return selected;
  return config::parse_tool_list(o.tools, "--tools");
}

// --hang-after reads where each rank is from the state the profile module writes: a launch
// without a stack gets it (said in one line); a stack without it, or Strata disabled, is refused
// rather than left to watch a job whose ranks never say anything.
bool with_hang_state(config::stack& stack) {
  for (const config::module_spec& m : stack.modules)
    if (m.name == "profile")
      return true;
  if (stack.ok() && stack.modules.empty() && stack.origin != "STRATA_DISABLE") {
    ::setenv("STRATA_TOOLS", "profile", 1);
    stack = config::parse_tool_list("profile", "--hang-after");
    error_line("note: --hang-after: the profile module added to the stack (it keeps where each "
               "rank is)");
    return true;
  }
  if (!stack.ok())
    return true; // check_stack says what is wrong with it
  std::string with_profile = "profile";
  for (const config::module_spec& m : stack.modules)
    with_profile += "," + m.name;
  error_line(stack.origin == "STRATA_DISABLE"
                 ? "error: --hang-after: Strata is disabled (STRATA_DISABLE), so no rank says "
                   "where it is"
                 : "error: --hang-after needs the profile module, which keeps where each rank "
                   "is, in the stack (" +
                       stack.origin + "): for example --tools " + with_profile);
  return false;
}

struct target {
  std::string path;
  std::string flavor;
  std::string error;
};

target find_target(const launch_options& o, bool allow_launcher_env) {
  target t;
  if (o.program.empty()) {
    t.error = "no program given: strata exec|run [options] -- PROG [ARGS]";
    return t;
  }
  t.path = launch::resolve_program(o.program[0], env("PATH"));
  if (t.path.empty()) {
    t.error = o.program[0] + ": program not found";
    return t;
  }
  if (!o.mpi.empty()) {
    t.flavor = o.mpi;
    return t;
  }
  std::string why;
  t.flavor = launch::flavor_of_command(t.path, env("PATH"), why);
  if (t.flavor.empty() && allow_launcher_env)
    t.flavor = launch::flavor_of_launcher(env);
  if (t.flavor.empty())
    t.error = why;
  return t;
}

// Checks the stack with the core's own loading code; `extra_ranks` gets the processes a module
// takes beside `app_ranks` application ranks (the monitor's tree).
int check_stack(const config::stack& stack, const std::string& core_library, int app_ranks,
                int& extra_ranks) {
  extra_ranks = 0;
  if (!stack.ok()) {
    if (first_rank())
      error_line("error: " + stack.error);
    return 2;
  }
  if (stack.modules.empty())
    return 0;
  core_handle core = open_core(core_library);
  if (!core.error.empty()) {
    if (first_rank())
      error_line("error: " + core.error);
    return 2;
  }
  std::string taker;
  for (const config::module_spec& spec : stack.modules) {
    auto out = std::make_unique<strata_probe>();
    if (std::string e = probe_spec(core, spec, *out, app_ranks); !e.empty()) {
      if (first_rank())
        error_line("error: " + e);
      return 2;
    }
    if (out->takes_ranks != 0) {
      if (!taker.empty()) {
        if (first_rank())
          error_line("error: " + spec.origin + ": modules '" + taker + "' and '" + out->name +
                     "' both take processes out of the application's world; a stack can have "
                     "one");
        return 2;
      }
      taker = out->name;
      extra_ranks = out->extra_ranks;
    }
  }
  return 0;
}

// The program, its MPI and this installation's layout; false after one line saying why the
// program cannot run under Strata here (not found, no MPI, or an MPI this installation lacks).
bool find_usable_target(const launch_options& o, bool allow_launcher_env, target& t,
                        launch::layout& layout) {
  t = find_target(o, allow_launcher_env);
  if (!t.error.empty()) {
    error_line("error: " + t.error);
    return false;
  }
  layout = launch::find_layout(launch::self_executable());
  const std::string why = layout.missing_flavor(t.flavor);
  if (why.empty())
    return true;
  if (first_rank())
    error_line("error: " + t.path + " uses " + t.flavor + ", but " + why);
  return false;
}

// A program whose MPI calls the preloaded core cannot see runs as it is, with one line saying
// that no module will see it (so no record, no trace), rather than in silence.
void warn_if_unobservable(const target& t, const config::stack& stack) {
  if (stack.modules.empty() || !first_rank())
    return;
  if (const std::string why = launch::unobservable_program(t.path); !why.empty())
    error_line("warning: " + why + "; it runs without the modules (no record, no trace)");
}

} // namespace

int exec_command(const launch_options& o) {
  target t;
  launch::layout layout;
  if (!find_usable_target(o, true, t, layout))
    return 2;
  const std::string core = layout.core_library(t.flavor);
  const config::stack stack = apply_stack_options(o);
  if (!o.skip_check) {
    int extra_ranks = 0;
    if (int rc = check_stack(stack, core, 0, extra_ranks); rc != 0)
      return rc;
    warn_if_unobservable(t, stack);
  }
  ::setenv("LD_PRELOAD", launch::preload_value(core, env("LD_PRELOAD")).c_str(), 1);
  for (const auto& [name, value] : launch::tool_rank_environment(env))
    ::setenv(name.c_str(), value.c_str(), 1);
  // A Python program finds the `strata` package (annotations) without being told where.
  if (launch::runs_python(t.path, env("PATH")))
    ::setenv("PYTHONPATH",
             launch::python_path_value(layout.python_dir(), env("PYTHONPATH")).c_str(), 1);
  std::vector<std::string> args = o.program;
  std::vector<char*> argv = exec_argv(args);
  ::execv(t.path.c_str(), argv.data());
  error_line("error: cannot execute " + t.path);
  return 127;
}

int run_command(const launch_options& o) {
  target t;
  launch::layout layout;
  if (!find_usable_target(o, false, t, layout))
    return 2;
  config::stack stack = apply_stack_options(o);
  if (o.hang_after_s > 0 && !with_hang_state(stack))
    return 2;
  // -np is the application's ranks; a module that runs tools on processes of their own (the
  // monitor's tree) says how many more to start.
  int extra_ranks = 0;
  if (int rc = check_stack(stack, layout.core_library(t.flavor), o.ranks, extra_ranks); rc != 0)
    return rc;
  warn_if_unobservable(t, stack);
  // Tool ranks are taken out of the world in MPI_Init: a program that never calls it would just
  // run once more for each.
  if (extra_ranks > 0 && launch::runs_python(t.path, env("PATH"))) {
    const std::vector<std::string> rest(o.program.begin() + 1, o.program.end());
    std::string command; // what the user named, for the messages
    for (const std::string& word : o.program)
      command += (command.empty() ? "" : " ") + word;
    if (command.size() > 120)
      command = command.substr(0, 117) + "...";
    switch (launch::python_imports_mpi4py(t.path, rest, env("PATH"))) {
    case launch::python_imports::no:
      error_line("warning: '" + command + "' does not import mpi4py, so no tool rank is " +
                 "started: the stack's modules see no call of it");
      extra_ranks = 0;
      break;
    case launch::python_imports::unknown:
      error_line("warning: cannot tell whether '" + command + "' imports mpi4py; tool ranks are " +
                 "started, and a program without MPI runs once more for each");
      break;
    case launch::python_imports::yes:
      break;
    }
  } else if (extra_ranks > 0 && !o.mpi.empty()) {
    std::string why;
    if (launch::flavor_of_command(t.path, env("PATH"), why).empty()) {
      error_line("warning: " + t.path + " is not linked against an MPI library, so no tool rank " +
                 "is started: the stack's modules see no call of it");
      extra_ranks = 0;
    }
  }
  const int processes = o.ranks + extra_ranks;
  const int cores = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  rlimit nproc{};
  const long process_limit =
      ::getrlimit(RLIMIT_NPROC, &nproc) == 0 && nproc.rlim_cur != RLIM_INFINITY
          ? static_cast<long>(nproc.rlim_cur)
          : 0;
  if (const std::string why = launch::too_many_processes(processes, cores, process_limit, env);
      !why.empty()) {
    error_line("error: -np " + std::to_string(o.ranks) + ": " + why);
    return 2;
  }
  // Tool ranks on a full machine must not change how the application's ranks wait.
  const launch::wait_plan waits = launch::plan_waits(t.flavor, o.ranks, extra_ranks, cores,
                                                     env("OMPI_MCA_mpi_yield_when_idle"));
  for (const auto& [name, value] : waits.environment)
    ::setenv(name.c_str(), value.c_str(), 1);
  if (!waits.announcement.empty())
    error_line("run: " + waits.announcement);
  std::vector<std::string> args = launch::local_launch(t.flavor, processes);
  const auto add = [&args](const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
  };
  if (!waits.environment.empty()) {
    // Each rank runs `strata exec`, which preloads the core and tells a tool rank how to wait.
    add({launch::self_executable(), "exec", "--no-check", "--mpi", t.flavor, "--", t.path});
  } else {
    // The launcher hands the ranks the core to preload (the stack was checked just now) and
    // starts the program itself: a `strata exec` per rank loaded this command and its
    // libraries once per rank before the program started (15-30 ms each here).
    add(launch::rank_environment(
        t.flavor, "LD_PRELOAD",
        launch::preload_value(layout.core_library(t.flavor), env("LD_PRELOAD"))));
    if (launch::runs_python(t.path, env("PATH")))
      add(launch::rank_environment(
          t.flavor, "PYTHONPATH",
          launch::python_path_value(layout.python_dir(), env("PYTHONPATH"))));
    args.push_back(t.path);
  }
  args.insert(args.end(), o.program.begin() + 1, o.program.end());
  if (o.hang_after_s > 0) {
    std::string error;
    const std::string dir = make_hang_watch_dir(error);
    if (dir.empty()) {
      error_line("error: --hang-after: " + error);
      return 2;
    }
    // After the launcher's own arguments, before the program: where the ranks link their files.
    const std::vector<std::string> watch =
        launch::rank_environment(t.flavor, hang_watch_variable, dir);
    const size_t program_at = args.size() - o.program.size();
    args.insert(args.begin() + static_cast<std::ptrdiff_t>(program_at), watch.begin(), watch.end());
    ::setenv(hang_watch_variable, dir.c_str(), 1);
    return run_watching_hangs(args, dir, {o.hang_after_s, o.on_hang == "abort"});
  }
  if (extra_ranks > 0) // the launcher's last words may blame the application for a tool rank
    return launch::run_launcher_child({args, t.flavor, o.ranks, processes});
  std::vector<char*> argv = exec_argv(args);
  ::execvp(argv[0], argv.data());
  error_line("error: cannot execute " + args.front() + " (is " + t.flavor + " installed?)");
  return 127;
}

namespace {
// A module's declared options as the probe lists them (key TAB type TAB default TAB variables TAB
// help per line), as an indented table.
void print_options(const std::string& listing) {
  std::printf("    options (argument, else the variable, else the default):\n");
  size_t begin = 0;
  while (begin < listing.size()) {
    size_t end = listing.find('\n', begin);
    if (end == std::string::npos)
      end = listing.size();
    std::vector<std::string> fields;
    size_t field = begin;
    for (size_t tab = listing.find('\t', field); tab != std::string::npos && tab < end;
         tab = listing.find('\t', field)) {
      fields.push_back(listing.substr(field, tab - field));
      field = tab + 1;
    }
    fields.push_back(listing.substr(field, end - field));
    if (fields.size() == 5)
      std::printf("      %-14s %-22s default %-14s %s\n%-16s %s\n", fields[0].c_str(),
                  fields[1].c_str(), fields[2].empty() ? "(none)" : fields[2].c_str(),
                  fields[3].c_str(), "", fields[4].c_str());
    begin = end + 1;
  }
}
} // namespace

int modules_command(const std::string& only_flavor, const std::string& only_name) {
  const launch::layout layout = launch::find_layout(launch::self_executable());
  if (!only_flavor.empty()) {
    if (const std::string why = layout.missing_flavor(only_flavor); !why.empty()) {
      error_line("error: --mpi " + only_flavor + ": " + why);
      return 2;
    }
  }
  int status = 0;
  for (const std::string flavor : {"openmpi", "mpich"}) {
    if (!only_flavor.empty() && flavor != only_flavor)
      continue;
    if (::access(layout.core_library(flavor).c_str(), R_OK) != 0)
      continue;
    std::fflush(stdout);
    // One child per flavor: the two cores (and their MPI libraries) never share a process.
    const pid_t child = ::fork();
    if (child == 0) {
      core_handle core = open_core(layout.core_library(flavor));
      if (!core.error.empty()) {
        error_line("error: " + core.error);
        std::_Exit(2);
      }
      std::printf("%s modules:\n", flavor.c_str());
      std::set<std::string> seen;
      for (const std::string& dir : config::module_dirs(env, layout.module_dir(flavor))) {
        DIR* d = ::opendir(dir.c_str());
        if (d == nullptr)
          continue;
        std::vector<std::string> files;
        while (dirent* e = ::readdir(d)) {
          std::string name = e->d_name;
          if (name.size() > 3 && name.ends_with(".so"))
            files.push_back(name.substr(0, name.size() - 3));
        }
        ::closedir(d);
        std::sort(files.begin(), files.end());
        for (const std::string& name : files) {
          if (!seen.insert(name).second || (!only_name.empty() && name != only_name))
            continue;
          config::module_spec spec{dir + "/" + name + ".so", {}, dir};
          auto out = std::make_unique<strata_probe>();
          if (std::string e = probe_spec(core, spec, *out); !e.empty()) {
            std::printf("  %-12s (cannot load: %s)\n", name.c_str(), e.c_str());
            continue;
          }
          std::string what;
          if (out->wrapped_count > 0)
            what = "wraps " + std::to_string(out->wrapped_count) + " functions";
          if (out->event_count > 0)
            what += (what.empty() ? "" : ", ") + std::string("events for ") +
                    std::to_string(out->event_count) + " functions";
          if (what.empty())
            what = "no functions without arguments";
          std::string list = out->functions;
          if (list.size() > 100)
            list = list.substr(0, 97) + "...";
          std::printf("  %-12s %s\n  %-12s %s\n  %-12s %s\n", out->name, out->description, "",
                      what.c_str(), "", list.c_str());
          if (out->takes_ranks != 0)
            std::printf("  %-12s takes processes out of the application's world for its tools: "
                        "placed first in any stack\n",
                        "");
          if (!only_name.empty() && out->options[0] != '\0')
            print_options(out->options);
        }
      }
      std::fflush(stdout);
      std::_Exit(0);
    }
    int wstatus = 0;
    ::waitpid(child, &wstatus, 0);
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0)
      status = 2;
  }
  return status;
}

int patch_command(const std::string& in, const std::string& out) {
  const patch::patch_result r = patch::patch_file(in, out);
  if (!r.ok) {
    error_line("error: " + r.error);
    return 2;
  }
  for (const patch::renamed_symbol& s : r.renamed)
    std::printf("%s -> %s%s\n", s.from.c_str(), s.to.c_str(),
                s.version_cleared ? " (version requirement dropped)" : "");
  for (const std::string& name : r.fortran_kept)
    std::printf("%s kept (Fortran binding: it calls the C entry point, the next Strata layer)\n",
                name.c_str());
  std::printf("wrote %s: %zu imported PMPI references now call the next Strata layer\n",
              out.c_str(), r.renamed.size() + r.fortran_kept.size());
  return 0;
}

namespace {
class stack_commands final : public cli::wing_commands {
public:
  stack_commands(CLI::App& strata, const std::vector<std::string>& program) {
    options_.program = program;
    auto add_stack_options = [this](CLI::App* sub) {
      sub->add_option("--tools", options_.tools, "modules in order: a,b:key=value,c");
      sub->add_option("--config", options_.config, "config file listing the modules");
      sub->add_option("--mpi", options_.mpi, "MPI implementation (default: detected from PROG)")
          ->check(CLI::IsMember({"openmpi", "mpich"}));
    };
    exec_ = strata.add_subcommand("exec", "run PROG under the tool stack (inside mpirun)");
    add_stack_options(exec_);
    exec_->add_flag("--no-check", options_.skip_check, "the stack was already checked")->group("");
    run_ = strata.add_subcommand("run", "start an MPI job locally under the tool stack");
    add_stack_options(run_);
    run_->add_option("-n,--np", options_.ranks,
                     "the application's ranks (a module's tool ranks, the monitor's, come on top)")
        ->required()
        ->check(CLI::Range(1, 1 << 20));
    hang::add_hang_after_option(*run_, options_.hang_after_s, false,
                                "say why the job hangs once a rank has waited this long (90, "
                                "90s, 5m) inside one MPI call and no rank completed one "
                                "meanwhile (needs the profile module)");
    run_->add_option("--on-hang", options_.on_hang,
                     "report: print the diagnosis; abort: print it and end the job (exit 3)")
        ->check(CLI::IsMember({"report", "abort"}));
    // The monitor's settings were once options of `run`; they are the module's own now. The old
    // spellings stay, hidden, to say the new one in a line rather than CLI11's "not expected".
    for (const auto& [gone, now] : {std::pair{"--monitor-fanout", "--tools monitor:fanout=N"},
                                    std::pair{"--monitor-period", "--tools monitor:period=S"}}) {
      const std::string message = std::string(gone) + " is gone; say " + now;
      run_->add_option_function<std::string>(
              gone, [message](const std::string&) { throw CLI::ValidationError(message); })
          ->group("");
    }
    modules_ = strata.add_subcommand("modules",
                                     "list the modules and what they wrap; NAME: its options too");
    modules_->add_option("NAME", module_name_, "one module, with its options");
    modules_->add_option("--mpi", modules_flavor_, "only this MPI implementation")
        ->check(CLI::IsMember({"openmpi", "mpich"}));
    patch_ = strata.add_subcommand("patch", "turn a binary PMPI tool into a Strata module");
    patch_->add_option("IN", patch_in_, "the tool's shared object")->required();
    patch_->add_option("OUT", patch_out_, "the module to write")->required();
  }

  [[nodiscard]] std::optional<int> run() const override {
    if (exec_->parsed())
      return exec_command(options_);
    if (run_->parsed())
      return run_command(options_);
    if (modules_->parsed())
      return modules_command(modules_flavor_, module_name_);
    if (patch_->parsed())
      return patch_command(patch_in_, patch_out_);
    return std::nullopt;
  }

private:
  launch_options options_;
  std::string module_name_, modules_flavor_, patch_in_, patch_out_;
  CLI::App* exec_ = nullptr;
  CLI::App* run_ = nullptr;
  CLI::App* modules_ = nullptr;
  CLI::App* patch_ = nullptr;
};
} // namespace

std::unique_ptr<cli::wing_commands> add_stack_commands(CLI::App& strata,
                                                       const std::vector<std::string>& program) {
  return std::make_unique<stack_commands>(strata, program);
}

} // namespace strata::launch
