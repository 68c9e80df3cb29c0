#include "slurm/task_setup.hpp"

#include "config/config.hpp"

#include <sys/stat.h>
#include <unistd.h>

namespace strata::slurm {

namespace {
std::string site_config(const launch::layout& installation) {
  return installation.prefix + "/etc/strata/strata.conf";
}
} // namespace

task_setup plan_task(const std::string& program, const char* path_env, const std::string& stack,
                     const launch::layout& installation, const char* (*getenv)(const char*)) {
  task_setup setup;
  if (const char* disabled = getenv("STRATA_DISABLE");
      disabled != nullptr && std::string(disabled) == "1") {
    setup.left_alone = "STRATA_DISABLE=1";
    return setup;
  }
  if (stack == stack_off) {
    setup.left_alone = "--strata=off";
    return setup;
  }
  if (stack.empty() && ::access(site_config(installation).c_str(), R_OK) != 0) {
    setup.left_alone = "no stack: neither --strata nor a site default";
    return setup;
  }
  const std::string path = launch::resolve_program(program, path_env);
  if (path.empty()) {
    setup.left_alone = program + ": not found";
    return setup;
  }
  const launch::elf_dynamic elf = launch::read_elf_dynamic(path);
  if (!elf.error.empty()) {
    setup.left_alone = elf.error; // a script, a static binary, unreadable
    return setup;
  }
  const std::string flavor = launch::flavor_of_libraries(elf.libraries);
  if (flavor.empty()) {
    setup.left_alone = path + ": not an MPI program";
    return setup;
  }
  if (const std::string why = launch::unobservable_program(path); !why.empty()) {
    setup.left_alone = why;
    return setup;
  }
  if (const std::string why = installation.missing_flavor(flavor); !why.empty()) {
    setup.left_alone = path + " uses " + flavor + ", but " + why;
    return setup;
  }
  setup.flavor = flavor;
  setup.environment.emplace_back(
      "LD_PRELOAD", launch::preload_value(installation.core_library(flavor), getenv("LD_PRELOAD")));
  if (!stack.empty())
    setup.environment.emplace_back("STRATA_TOOLS", stack);
  return setup;
}

std::string stack_problem(const std::string& text) {
  if (text == stack_off)
    return {};
  if (text.empty())
    return "an empty stack: say --strata=STACK (e.g. profile) or --strata=off";
  const config::stack parsed = config::parse_tool_list(text, "--strata");
  return parsed.ok() ? std::string() : parsed.error;
}

plugin_arguments parse_plugin_arguments(const std::vector<std::string>& args) {
  plugin_arguments out;
  for (const std::string& arg : args) {
    if (arg.rfind("default=", 0) == 0)
      out.default_stack = arg.substr(8);
    else if (arg.rfind("prefix=", 0) == 0)
      out.prefix = arg.substr(7);
    else
      out.errors.push_back("strata: unknown plugin argument '" + arg +
                           "' (default=STACK, prefix=DIR)");
  }
  if (!out.default_stack.empty())
    if (const std::string why = stack_problem(out.default_stack); !why.empty()) {
      out.errors.push_back("strata: plugin argument default=" + out.default_stack + ": " + why +
                           "; no site default");
      out.default_stack.clear();
    }
  return out;
}

std::vector<std::string> launcher_options(const std::vector<std::string>& mpirun_args,
                                          const char* path_env, const std::string& stack,
                                          const launch::layout& installation,
                                          const char* (*getenv)(const char*)) {
  for (const std::string& arg : mpirun_args) {
    if (arg.empty() || arg[0] == '-')
      continue;
    const std::string path = launch::resolve_program(arg, path_env);
    struct stat file {};
    if (path.empty() || ::stat(path.c_str(), &file) != 0 || !S_ISREG(file.st_mode))
      continue; // an option's value, a directory

    const task_setup setup = plan_task(path, path_env, stack, installation, getenv);
    std::vector<std::string> options;
    for (const auto& [name, value] : setup.environment)
      for (std::string& option : launch::rank_environment(setup.flavor, name, value))
        options.push_back(std::move(option));
    return options;
  }
  return {};
}

} // namespace strata::slurm
