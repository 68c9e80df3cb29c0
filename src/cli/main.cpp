// The `strata` command: a thin dispatcher. Each wing registers its own commands
// (src/common/wing_commands.hpp); this file only splits off the program after "--", checks the
// command words, parses, and runs what was chosen.
#include "analyzer/commands.hpp"
#include "hang/commands.hpp"
#include "launch/commands.hpp"
#include "model/commands.hpp"
#include "monitor/commands.hpp"
#include "profiler/commands.hpp"
#include "site/commands.hpp"
#include "slurm/commands.hpp"

#include <strata/version.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace {
std::string command_path(const CLI::App* command) {
  std::string path;
  for (; command != nullptr; command = command->get_parent())
    path = path.empty() ? command->get_name() : command->get_name() + " " + path;
  return path;
}

std::string command_names(const CLI::App* command) {
  std::string names;
  for (const CLI::App* sub : command->get_subcommands({}))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

// Follows the command words (`strata monitor serve ...`) before CLI11 parses them, so that an
// unknown or missing command is one line naming it (CLI11 would print the parent's "A subcommand
// is required"). Returns 0, or the exit status after the message; `chosen` is the deepest
// command named.
int check_command_words(const CLI::App& app, const std::vector<std::string>& words,
                        const CLI::App*& chosen) {
  const CLI::App* command = &app;
  chosen = command;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word.starts_with("-"))
      return 0; // options (and --help, --version) are CLI11's to judge
    const CLI::App* sub = nullptr;
    for (const CLI::App* candidate : command->get_subcommands({}))
      if (candidate->check_name(word))
        sub = candidate;
    if (sub == nullptr) {
      if (command->get_require_subcommand_min() == 0)
        return 0; // a positional argument of this command
      std::fprintf(stderr, "strata: error: '%s' is not a command of '%s' (commands: %s)\n",
                   word.c_str(), command_path(command).c_str(), command_names(command).c_str());
      return 2;
    }
    command = sub;
    chosen = command;
  }
  if (command->get_require_subcommand_min() > 0) {
    std::fprintf(stderr, "strata: error: '%s' needs a command: %s (see '%s --help')\n",
                 command_path(command).c_str(), command_names(command).c_str(),
                 command_path(command).c_str());
    return 2;
  }
  return 0;
}

int run_main(int argc, char** argv) {
  // Everything after "--" is the program and its arguments, never parsed as ours.
  int split = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      split = i;
      break;
    }
  }
  std::vector<std::string> program(argv + (split < argc ? split + 1 : argc), argv + argc);
  // mpirun spells it -np; CLI11 would read that as "-n p".
  std::vector<std::string> ours(argv, argv + split);
  for (std::string& a : ours)
    if (a == "-np")
      a = "--np";

  CLI::App app{"Strata: MPI performance tools, loaded at run time into unmodified programs",
               "strata"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "strata " STRATA_VERSION);
  // In the order `strata --help` lists them.
  std::vector<std::unique_ptr<strata::cli::wing_commands>> wings;
  wings.push_back(strata::launch::add_stack_commands(app, program));
  wings.push_back(strata::monitor::add_monitor_commands(app));
  wings.push_back(strata::profiler::add_profiler_commands(app));
  wings.push_back(strata::bench::add_model_commands(app));
  wings.push_back(strata::analyze::add_analyzer_commands(app));
  wings.push_back(strata::hang::add_hang_commands(app));
  wings.push_back(strata::site::add_site_commands(app));
  wings.push_back(strata::slurm::add_slurm_commands(app, program));

  const CLI::App* chosen = &app;
  if (const int status = check_command_words(app, ours, chosen); status != 0)
    return status;
  try {
    std::reverse(ours.begin() + 1, ours.end()); // CLI11 takes the arguments in reverse order
    app.parse(std::vector<std::string>(ours.begin() + 1, ours.end()));
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line naming the problem and where to read more, whatever CLI11 found.
    std::fprintf(stderr, "strata: error: %s: %s (see '%s --help')\n", command_path(chosen).c_str(),
                 e.what(), command_path(chosen).c_str());
    return 2;
  }
  for (const auto& wing : wings)
    if (const std::optional<int> status = wing->run())
      return *status;
  return 2;
}
} // namespace

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata: error: %s\n", e.what());
    return 2;
  }
}
