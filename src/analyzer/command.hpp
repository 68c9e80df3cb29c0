// `strata analyze` and `strata trace export --xml`: what the command line does with the library.
#pragma once

#include "common/wing_commands.hpp"

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

namespace strata::analyze {

// Prints the report (format "text", "json" or "csv") on stdout; errors as one line on stderr.
// Returns the exit status.
int analyze_command(const std::string& trace, const std::string& format);

// Writes the HieraAnalyses XML files into out_dir (default: TRACE-xml next to the archive).
int export_xml_command(const std::string& trace, const std::string& out_dir);

// Registers `analyze` and `trace export` on `strata`.
std::unique_ptr<cli::wing_commands> add_analyzer_commands(CLI::App& strata);

} // namespace strata::analyze
