// The analysis report for people (text tables like the HieraAnalyses paper's), for programs
// (JSON) and for spreadsheets (CSV: one block per table, each with its own header row).
#pragma once

#include "analyzer/analysis.hpp"

#include <string>

namespace strata::analyze {

std::string render_text(const report& r);
std::string render_json(const report& r);
std::string render_csv(const report& r);

// The report in `format` ("text", "json" or "csv") on stdout. A truncated trace is said in the
// report's first warning; in JSON and CSV, whose readers are programs, also on stderr, in that
// one line after "<command>: warning: ".
void print_report(const report& r, const std::string& format, const char* command);

} // namespace strata::analyze
