#include "analyzer/command.hpp"

#include "analyzer/analysis.hpp"
#include "analyzer/render.hpp"
#include "analyzer/xml_export.hpp"
#include "launch/launch.hpp"

#include <unistd.h>

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
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
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

} // namespace strata::analyze
