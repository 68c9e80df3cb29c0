// `strata report` and `strata recover`: the job record rendered, and partial records from the
// rank files of jobs that did not finalize.
#include "profiler/commands.hpp"

#include "profiler/record/render.hpp"
#include "profiler/spool.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace strata::profiler {
namespace {

void error_line(const std::string& message) {
  std::fprintf(stderr, "strata: %s\n", message.c_str());
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
