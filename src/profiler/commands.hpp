// `strata report` and `strata recover`, registered by the profiler.
#pragma once

#include "common/wing_commands.hpp"

#include <memory>

namespace strata::profiler {

std::unique_ptr<cli::wing_commands> add_profiler_commands(CLI::App& strata);

} // namespace strata::profiler
