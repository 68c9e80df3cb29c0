// How a wing adds its commands to `strata`. Each wing has a function add_<wing>_commands(CLI::App&)
// that registers its subcommands before the command line is parsed and returns one of these;
// after parsing, the dispatcher (src/cli/main.cpp) asks each wing in turn to run what was given.
#pragma once

#include <optional>

// Declared, not included: CLI11 is header-only and about 2 s of GCC's time and 16 s of
// clang-tidy's in every file that includes it, so only the files that build commands include it.
namespace CLI {
class App;
class Option;
} // namespace CLI

namespace strata::cli {

class wing_commands {
public:
  wing_commands() = default;
  wing_commands(const wing_commands&) = delete; // CLI11 holds references into the object
  wing_commands& operator=(const wing_commands&) = delete;
  virtual ~wing_commands() = default;
  // The exit status of this wing's command when one of them was given; nothing otherwise.
  [[nodiscard]] virtual std::optional<int> run() const = 0;
};

} // namespace strata::cli
