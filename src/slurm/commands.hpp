// `strata slurm launcher-options -- MPIRUN_ARGS`: for the mpirun wrappers of a Slurm job.
#pragma once

#include "common/wing_commands.hpp"

#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace strata::slurm {

std::unique_ptr<cli::wing_commands> add_slurm_commands(CLI::App& strata,
                                                       const std::vector<std::string>& program);

} // namespace strata::slurm
