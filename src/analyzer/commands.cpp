#include "analyzer/commands.hpp"
#include "common/exec_argv.hpp"

#include "analyzer/analysis.hpp"
#include "analyzer/perfetto_export.hpp"
#include "analyzer/render.hpp"
#include "analyzer/xml_export.hpp"
#include "launch/launch.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cmath>
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

// The work over MPI: under a launcher this process becomes the worker of the launcher's flavor;
// with --np it starts the launcher of the chosen flavor on the worker. `what` names the command
// in messages; worker_args follow the worker's path.
int run_worker(const char* what, int processes, const std::string& mpi,
               const std::string& launched_by, const std::vector<std::string>& worker_args) {
  const std::string prefix = launch::find_layout(launch::self_executable()).prefix;
  std::string flavor = launched_by.empty() ? mpi : launched_by;
  if (flavor.empty())
    flavor = ::access(worker_of(prefix, "openmpi").c_str(), X_OK) == 0 ? "openmpi" : "mpich";
  const std::string worker = worker_of(prefix, flavor);
  if (::access(worker.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "%s: %s is missing (was Strata built with %s?)\n", what, worker.c_str(),
                 flavor.c_str());
    return 2;
  }
  std::vector<std::string> args;
  if (launched_by.empty()) {
    // A job on this one node needs no network: Open MPI's cm transport, tried before the others,
    // spends 0.2 s of a 0.3 s start and end probing network libraries here before ob1 is chosen
    // anyway (docs/PERFORMANCE.md, "Analyzer"). A user's own setting stands.
    if (flavor == "openmpi")
      ::setenv("OMPI_MCA_pml", "^cm", 0);
    args = launch::local_launch(flavor, processes);
  }
  args.push_back(worker);
  args.insert(args.end(), worker_args.begin(), worker_args.end());
  return exec_worker(args);
}

// The flavor of the MPI launcher that started this process (of either flavor), or "".
std::string launcher_flavor() {
  return launch::flavor_of_launcher(
      [](const char* name) -> const char* { return std::getenv(name); });
}

} // namespace

int analyze_command(const analyze_options& o) {
  // A process started by mpirun (of either flavor) is one of several analysis processes.
  const std::string launched_by = launcher_flavor();
  if (o.processes > 0 || !launched_by.empty()) {
    std::vector<std::string> args;
    if (o.format != "text")
      args.push_back("--" + o.format);
    args.push_back(o.trace);
    return run_worker("strata analyze", o.processes, o.mpi, launched_by, args);
  }
  try {
    print_report(analyze_trace(o.trace), o.format, "strata analyze");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata analyze: %s\n", e.what());
    return 1;
  }
}

// The archive's directory, as the default outputs are named after it.
std::string archive_base(const std::string& trace) {
  std::filesystem::path base(trace);
  if (!base.has_filename())
    base = base.parent_path();
  if (base.extension() == ".otf2") // the anchor file: its directory is the archive
    base = base.parent_path();
  return base.string();
}

int export_xml_command(const export_options& o) {
  std::string dir = o.out_dir;
  if (dir.empty())
    dir = archive_base(o.trace) + "-xml";
  const std::string launched_by = launcher_flavor();
  if (o.processes > 0 || !launched_by.empty())
    return run_worker("strata trace export", o.processes, o.mpi, launched_by,
                      {"--xml", dir, o.trace});
  const std::string& trace = o.trace;
  try {
    const xml_export_result x = export_xml(trace, dir);
    std::printf("%s: %u ranks, %llu operations\n", x.config.c_str(), x.ranks, x.operations);
    if (!x.truncated.empty())
      std::fprintf(stderr, "strata trace export: warning: %s\n", x.truncated.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata trace export: %s\n", e.what());
    return 1;
  }
}

namespace {
// Seconds as given on the command line: a number, not negative.
bool parse_seconds(const std::string& text, const char* option, double& seconds) {
  size_t used = 0;
  try {
    seconds = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(seconds >= 0) || std::isinf(seconds)) {
    std::fprintf(stderr, "strata trace export: %s %s: not a time in seconds such as 0.5 or 12\n",
                 option, text.c_str());
    return false;
  }
  return true;
}
} // namespace

int export_perfetto_command(const perfetto_options& o) {
  perfetto_selection selection;
  if (!o.from.empty() && !parse_seconds(o.from, "--from", selection.from_s))
    return 2;
  if (!o.to.empty() && !parse_seconds(o.to, "--to", selection.to_s))
    return 2;
  if (!(selection.to_s > selection.from_s)) {
    std::fprintf(stderr,
                 "strata trace export: --from %s --to %s: the window ends before it begins\n",
                 o.from.c_str(), o.to.c_str());
    return 2;
  }
  if (!o.ranks.empty()) {
    try {
      parse_rank_range(o.ranks, selection);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "strata trace export: --ranks %s\n", e.what());
      return 2;
    }
  }
  const std::string file =
      o.out_file.empty() ? archive_base(o.trace) + "-perfetto.json" : o.out_file;
  const std::string launched_by = launcher_flavor();
  if (o.processes > 0 || !launched_by.empty()) {
    std::vector<std::string> args{"--perfetto", file};
    for (const auto& [option, value] :
         {std::pair{"--from", o.from}, std::pair{"--to", o.to}, std::pair{"--ranks", o.ranks}})
      if (!value.empty())
        args.insert(args.end(), {option, value});
    args.push_back(o.trace);
    return run_worker("strata trace export", o.processes, o.mpi, launched_by, args);
  }
  try {
    print_perfetto_result(export_perfetto(o.trace, file, selection));
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
    export_command_ = trace->add_subcommand("export", "convert a trace to another format");
    auto* xml =
        export_command_->add_flag("--xml", as_xml_, "the HieraAnalyses XML (one file per rank)");
    auto* perfetto = export_command_->add_flag(
        "--perfetto", as_perfetto_,
        "Chrome trace-event JSON for ui.perfetto.dev and Chromium's trace viewer (one file)");
    xml->excludes(perfetto);
    export_command_->add_option("TRACE", export_.trace, "OTF2 archive")->required();
    export_command_->add_option(
        "-o,--out", export_.out_dir,
        "output directory (--xml, default TRACE-xml) or file (--perfetto, default "
        "TRACE-perfetto.json)");
    export_command_
        ->add_option("--from", perfetto_.from,
                     "--perfetto: operations that end at or after this time (seconds from the "
                     "start of the trace)")
        ->needs(perfetto);
    export_command_
        ->add_option("--to", perfetto_.to,
                     "--perfetto: operations that begin at or before this time (seconds)")
        ->needs(perfetto);
    export_command_->add_option("--ranks", perfetto_.ranks, "--perfetto: ranks A-B (or A) only")
        ->needs(perfetto);
    export_command_
        ->add_option("-n,--np", export_.processes,
                     "export processes, started with mpirun (default: one, no launcher)")
        ->check(CLI::Range(1, 1 << 24));
    export_command_->add_option("--mpi", export_.mpi, "MPI implementation of the export processes")
        ->check(CLI::IsMember({"openmpi", "mpich"}));
  }

  [[nodiscard]] std::optional<int> run() const override {
    if (analyze_->parsed()) {
      analyze_options o = options_;
      o.format = json_ ? "json" : csv_ ? "csv" : "text";
      return analyze_command(o);
    }
    if (export_command_->parsed()) {
      if (as_perfetto_) {
        perfetto_options o = perfetto_;
        o.trace = export_.trace;
        o.out_file = export_.out_dir;
        o.processes = export_.processes;
        o.mpi = export_.mpi;
        return export_perfetto_command(o);
      }
      if (!as_xml_) {
        std::fprintf(stderr, "strata trace export: say which format: --xml or --perfetto\n");
        return 2;
      }
      return export_xml_command(export_);
    }
    return std::nullopt;
  }

private:
  analyze_options options_;
  export_options export_;
  perfetto_options perfetto_;
  bool json_ = false, csv_ = false, as_xml_ = false, as_perfetto_ = false;
  CLI::App* analyze_ = nullptr;
  CLI::App* export_command_ = nullptr;
};
} // namespace

std::unique_ptr<cli::wing_commands> add_analyzer_commands(CLI::App& strata) {
  return std::make_unique<analyzer_commands>(strata);
}

} // namespace strata::analyze
