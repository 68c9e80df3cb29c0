#include "analyzer/command.hpp"
#include "common/exec_argv.hpp"

#include "analyzer/analysis.hpp"
#include "analyzer/render.hpp"
#include "analyzer/xml_export.hpp"
#include "launch/launch.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>

namespace strata::analyze {

namespace {

std::string worker_of(const std::string& prefix, const std::string& flavor) {
  return prefix + "/lib/strata/" + flavor + "/strata-analyze";
}

int exec_worker(std::vector<std::string> args) {
  std::vector<char*> argv = exec_argv(args);
  std::fflush(stdout);
  std::fflush(stderr);
  ::execvp(argv[0], argv.data());
  std::fprintf(stderr, "strata analyze: cannot execute %s\n", argv[0]);
  return 127;
}

// The MPI analysis: under a launcher this process becomes the worker of the launcher's flavor;
// with --np it starts the launcher of the chosen flavor on the worker.
int analyze_with_mpi(const analyze_options& o, const std::string& launched_by) {
  const std::string prefix = launch::find_layout(launch::self_executable()).prefix;
  std::string flavor = launched_by.empty() ? o.mpi : launched_by;
  if (flavor.empty())
    flavor = ::access(worker_of(prefix, "openmpi").c_str(), X_OK) == 0 ? "openmpi" : "mpich";
  const std::string worker = worker_of(prefix, flavor);
  if (::access(worker.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "strata analyze: %s is missing (was Strata built with %s?)\n",
                 worker.c_str(), flavor.c_str());
    return 2;
  }
  std::vector<std::string> args;
  if (launched_by.empty())
    args = launch::local_launch(flavor, o.processes);
  args.push_back(worker);
  if (o.format != "text")
    args.push_back("--" + o.format);
  args.push_back(o.trace);
  return exec_worker(args);
}

} // namespace

int analyze_command(const analyze_options& o) {
  // A process started by mpirun (of either flavor) is one of several analysis processes.
  const std::string launched_by =
      launch::flavor_of_launcher([](const char* name) -> const char* { return std::getenv(name); });
  if (o.processes > 0 || !launched_by.empty())
    return analyze_with_mpi(o, launched_by);
  try {
    const report r = analyze_trace(o.trace);
    const std::string text = o.format == "json"  ? render_json(r)
                             : o.format == "csv" ? render_csv(r)
                                                 : render_text(r);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata analyze: %s\n", e.what());
    return 1;
  }
}

int export_xml_command(const std::string& trace, const std::string& out_dir) {
  try {
    std::string dir = out_dir;
    if (dir.empty()) {
      std::filesystem::path base(trace);
      if (!base.has_filename())
        base = base.parent_path();
      if (base.extension() == ".otf2") // the anchor file: its directory is the archive
        base = base.parent_path();
      dir = base.string() + "-xml";
    }
    const xml_export_result x = export_xml(trace, dir);
    std::printf("%s: %u ranks, %llu operations\n", x.config.c_str(), x.ranks, x.operations);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata trace export: %s\n", e.what());
    return 1;
  }
}

namespace {
class analyzer_commands final : public cli::wing_commands {
public:
  explicit analyzer_commands(CLI::App& strata) {
    analyze_ = strata.add_subcommand(
        "analyze", "event graph of an OTF2 trace: operations per level and call site, wait states");
    analyze_->add_option("TRACE", options_.trace, "OTF2 archive (directory or anchor file)")
        ->required();
    analyze_
        ->add_option("-n,--np", options_.processes,
                     "analysis processes, started with mpirun (default: one, no launcher)")
        ->check(CLI::Range(1, 1 << 24));
    analyze_->add_option("--mpi", options_.mpi, "MPI implementation of the analysis processes")
        ->check(CLI::IsMember({"openmpi", "mpich"}));
    auto* json_flag = analyze_->add_flag("--json", json_, "JSON instead of text tables");
    analyze_->add_flag("--csv", csv_, "CSV instead of text tables")->excludes(json_flag);
    CLI::App* trace = strata.add_subcommand("trace", "work with OTF2 traces");
    trace->require_subcommand(1);
    export_ = trace->add_subcommand("export", "convert a trace to another format");
    export_->add_flag("--xml", as_xml_, "the HieraAnalyses XML (one file per rank)")->required();
    export_->add_option("TRACE", export_trace_, "OTF2 archive")->required();
    export_->add_option("--out", export_out_, "output directory (default: TRACE-xml)");
  }

  [[nodiscard]] std::optional<int> run() const override {
    if (analyze_->parsed()) {
      analyze_options o = options_;
      o.format = json_ ? "json" : csv_ ? "csv" : "text";
      return analyze_command(o);
    }
    if (export_->parsed())
      return export_xml_command(export_trace_, export_out_);
    return std::nullopt;
  }

private:
  analyze_options options_;
  std::string export_trace_, export_out_;
  bool json_ = false, csv_ = false, as_xml_ = false;
  CLI::App* analyze_ = nullptr;
  CLI::App* export_ = nullptr;
};
} // namespace

std::unique_ptr<cli::wing_commands> add_analyzer_commands(CLI::App& strata) {
  return std::make_unique<analyzer_commands>(strata);
}

} // namespace strata::analyze
