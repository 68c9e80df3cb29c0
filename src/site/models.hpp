// `strata site models`: a scaling model (site/scaling.hpp) per program (site/programs.hpp) run
// at three or more sizes, for its wall time, its MPI time and each MPI routine, all per rank:
// at each size the median over its newest complete runs. Partial and unfinished runs are left
// out and counted; a program with too few sizes gets one line saying what is missing. Rendered
// as text for people, and as JSON for scripts and the web's trends page.
#pragma once

#include "site/programs.hpp"
#include "site/scaling.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::site {

class store;

struct model_options {
  std::optional<std::string> owner, executable;
  std::int64_t since = 0; // runs that ended at or after
  int runs_per_size = 20; // the newest complete runs at each size
};

// One quantity's model: "wall", "MPI" or an MPI routine.
struct quantity_model {
  std::string name;
  scaling_model model;
  std::vector<size_sample> sizes;
};

struct program_models {
  program prog;
  std::vector<std::int64_t> ranks;    // sizes with complete runs, ascending
  int runs = 0;                       // complete runs used
  int left_out = 0;                   // partial or unfinished runs left out
  std::string missing;                // why there is no model (empty when modelled)
  std::vector<quantity_model> models; // wall, MPI, then routines by time at the largest size
  // Twice and four times the largest size, and the routine that takes longest there.
  std::vector<std::int64_t> predicted_ranks;
  std::vector<std::string> dominant;
};

std::vector<program_models> build_models(store& db, const model_options& options);

std::string render_models_text(const std::vector<program_models>& programs);
// The models as JSON (`strata site models --format json`, and the web's trends page).
nlohmann::json models_json(const std::vector<program_models>& programs);
std::string render_models_json(const std::vector<program_models>& programs);

} // namespace strata::site
