// `strata report` and `strata recover`: the job record rendered, and partial records from the
// rank files of jobs that did not finalize.
#include "profiler/commands.hpp"

#include "common/atomic_file.hpp"
#include "hang/commands.hpp"
#include "hang/diagnose.hpp"
#include "hang/tree_ask.hpp"
#include "profiler/record/render.hpp"
#include "profiler/spool.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace strata::profiler {
namespace {

void error_line(const std::string& message) {
  std::fprintf(stderr, "strata: %s\n", message.c_str());
}

// After a partial record is written: when the job's hang state files show ranks waiting inside
// MPI, the diagnosis goes into the record as its `hang` section (docs/job-record.md).
void add_hang_section(const std::string& spool, const recovery& r) {
  hang::hang_options o;
  o.inputs = {spool};
  o.job = r.job_key;
  const hang::loaded_states loaded = hang::load_states(o);
  // Read: the files go, as the rank files did.
  std::error_code ec;
  for (const hang::rank_state& state : loaded.states)
    std::filesystem::remove(state.source, ec);
  if (!loaded.error.empty())
    return;                     // this job left no state files
  const uint64_t threshold = 0; // the job is over: judged as of its last heartbeat
  const hang::diagnosis d =
      hang::diagnose(loaded.states, hang::latest_time(loaded.states), threshold);
  if (d.result == hang::verdict::no_states || d.result == hang::verdict::all_finished ||
      d.result == hang::verdict::all_computing)
    return;
  std::ifstream in(r.record_path);
  nlohmann::json record = nlohmann::json::parse(in, nullptr, false);
  if (!record.is_object())
    return;
  nlohmann::json section = nlohmann::json::parse(hang::format_json(d), nullptr, false);
  if (!section.is_object())
    return;
  section["text"] = hang::format_text(d);
  record["hang"] = std::move(section);
  if (const std::string error = common::write_atomically(r.record_path, record.dump(1));
      !error.empty())
    error_line("warning: " + r.record_path + ": the hang section is not kept (" + error + ")");
}

int report_command(const std::string& record, const std::string& format, const std::string& model) {
  std::string output;
  std::string error;
  const int rc = record::report_main(record, format, model, output, error);
  if (rc != 0) {
    error_line("error: " + error);
    return rc;
  }
  std::fwrite(output.data(), 1, output.size(), stdout);
  return 0;
}

int recover_command(const std::vector<std::string>& spools) {
  int status = 0;
  for (const std::string& spool : spools) {
    for (const profiler::recovery& r : recover_spool(spool)) {
      for (const std::string& p : r.problems) {
        error_line(p);
        status = 1;
      }
      if (!r.record_path.empty()) {
        add_hang_section(spool, r);
        // The job is gone: what its tree of tool ranks and those who asked it left too.
        hang::remove_tree_files(spool, r.job_key);
      }
      if (!r.record_path.empty())
        std::printf("%s: partial record from %d rank files -> %s\n", r.job_key.c_str(),
                    r.ranks_read, r.record_path.c_str());
    }
  }
  return status;
}

class profiler_commands final : public cli::wing_commands {
public:
  explicit profiler_commands(CLI::App& strata) {
    report_ = strata.add_subcommand("report", "render a job record for people or tools");
    report_->add_option("RECORD", record_, "job record (strata.job/1 JSON)")->required();
    report_->add_option("--format", format_, "text, json, csv or html");
    report_->add_option("--model", model_, "machine model (strata bench) for the estimate");
    recover_ = strata.add_subcommand(
        "recover", "turn the per-rank files of jobs that did not finalize into partial records");
    recover_->add_option("SPOOL", spools_, "spool directories")->required();
  }

  [[nodiscard]] std::optional<int> run() const override {
    if (report_->parsed())
      return report_command(record_, format_, model_);
    if (recover_->parsed())
      return recover_command(spools_);
    return std::nullopt;
  }

private:
  std::string record_, format_ = "text", model_;
  std::vector<std::string> spools_;
  CLI::App* report_ = nullptr;
  CLI::App* recover_ = nullptr;
};

} // namespace

std::unique_ptr<cli::wing_commands> add_profiler_commands(CLI::App& strata) {
  return std::make_unique<profiler_commands>(strata);
}

} // namespace strata::profiler
