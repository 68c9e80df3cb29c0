// Registers `strata site` with the store's and the web interface's subcommands.
#pragma once

#include "common/wing_commands.hpp"

#include <memory>

namespace strata::site {

std::unique_ptr<cli::wing_commands> add_site_commands(CLI::App& strata);

} // namespace strata::site
