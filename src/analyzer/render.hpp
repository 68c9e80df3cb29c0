// The analysis report for people (text tables like the HieraAnalyses paper's), for programs
// (JSON) and for spreadsheets (CSV: one block per table, each with its own header row).
#pragma once

#include "analyzer/analysis.hpp"

#include <string>

namespace strata::analyze {

std::string render_text(const report& r);
std::string render_json(const report& r);
std::string render_csv(const report& r);

} // namespace strata::analyze
