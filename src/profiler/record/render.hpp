// `strata report`: a job record rendered for people (text, html) or for other tools (json, csv).
// The text report follows the levels of Rabenseifner's per-job report: the MPI share of the
// run first, then counter rates, then per-routine figures and, with a machine model, the
// latency/transfer/synchronisation estimate.
#pragma once

#include "profiler/record/record.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace strata::record {

enum class report_format { text, json, csv, html };

// "text", "json", "csv" or "html"; anything else is nullopt.
std::optional<report_format> parse_format(std::string_view name);

// `model` may be null: the estimate columns are then left out. Strings from the record are
// made safe for the format: control characters escaped in text, HTML-escaped in html,
// RFC 4180 quoting in csv.
std::string render(const job_record& record, report_format format,
                   const model::machine_model* model = nullptr);

// Whether an html report draws its communication heat map: a page that draws its own of the
// same pairs (the web's job page, which zooms) leaves the report's out.
enum class heat_map { drawn, left_out };

// The html report's content without the document around it, for a page that shows the report
// among its own: one <div class="report"> holding the report's style, every rule scoped to that
// element so that none reaches the page around it, and the sections the full document holds
// (the heat map as `map` says).
std::string render_html_fragment(const job_record& record,
                                 const model::machine_model* model = nullptr,
                                 heat_map map = heat_map::drawn);

// The whole subcommand without the command line: reads the record (and the model when
// `model_path` is not empty) and renders it. Returns 0 with `output` set, or 2 with `error`
// set to one line that names the file at fault, e.g. "job.json: routines.MPI_Send.calls is
// missing".
int report_main(const std::string& record_path, const std::string& format,
                const std::string& model_path, std::string& output, std::string& error);

} // namespace strata::record
