#include "slurm/commands.hpp"

#include "slurm/task_setup.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>

namespace strata::slurm {
namespace {

const char* env(const char* name) {
  return std::getenv(name);
}

class slurm_commands final : public cli::wing_commands {
public:
  slurm_commands(CLI::App& strata, const std::vector<std::string>& program) : program_(program) {
    slurm_ = strata.add_subcommand("slurm", "Slurm integration (docs/slurm.md)");
    slurm_->require_subcommand(1);
    options_ = slurm_->add_subcommand(
        "launcher-options",
        "mpirun's arguments that give the ranks of `-- MPIRUN_ARGS` Strata's core, one a line");
  }

  [[nodiscard]] std::optional<int> run() const override {
    if (!options_->parsed())
      return std::nullopt;
    const char* stack = env(stack_variable);
    const launch::layout installation = launch::find_layout(launch::self_executable());
    for (const std::string& option :
         launcher_options(program_, env("PATH"), stack != nullptr ? stack : "", installation, env))
      std::printf("%s\n", option.c_str());
    return 0;
  }

private:
  std::vector<std::string> program_;
  CLI::App* slurm_ = nullptr;
  CLI::App* options_ = nullptr;
};

} // namespace

std::unique_ptr<cli::wing_commands> add_slurm_commands(CLI::App& strata,
                                                       const std::vector<std::string>& program) {
  return std::make_unique<slurm_commands>(strata, program);
}

} // namespace strata::slurm
