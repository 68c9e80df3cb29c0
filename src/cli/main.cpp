// The `strata` command: a thin dispatcher over the libraries.
#include "analyzer/command.hpp"
#include "bench/bench_command.hpp"
#include "cli/commands.hpp"
#include "cli/monitor_command.hpp"
#include "site/commands.hpp"
#include "site/web/commands.hpp"

#include <strata/version.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {
std::string command_path(const CLI::App* command) {
  std::string path;
  for (; command != nullptr; command = command->get_parent())
    path = path.empty() ? command->get_name() : command->get_name() + " " + path;
  return path;
}

std::string command_names(const CLI::App* command) {
  std::string names;
  for (const CLI::App* sub : command->get_subcommands({}))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

// Follows the command words (`strata monitor serve ...`) before CLI11 parses them, so that an
// unknown or missing command is one line naming it (CLI11 would print the parent's "A subcommand
// is required"). Returns 0, or the exit status after the message; `chosen` is the deepest
// command named.
int check_command_words(const CLI::App& app, const std::vector<std::string>& words,
                        const CLI::App*& chosen) {
  const CLI::App* command = &app;
  chosen = command;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word.starts_with("-"))
      return 0; // options (and --help, --version) are CLI11's to judge
    const CLI::App* sub = nullptr;
    for (const CLI::App* candidate : command->get_subcommands({}))
      if (candidate->check_name(word))
        sub = candidate;
    if (sub == nullptr) {
      if (command->get_require_subcommand_min() == 0)
        return 0; // a positional argument of this command
      std::fprintf(stderr, "strata: error: '%s' is not a command of '%s' (commands: %s)\n",
                   word.c_str(), command_path(command).c_str(), command_names(command).c_str());
      return 2;
    }
    command = sub;
    chosen = command;
  }
  if (command->get_require_subcommand_min() > 0) {
    std::fprintf(stderr, "strata: error: '%s' needs a command: %s (see '%s --help')\n",
                 command_path(command).c_str(), command_names(command).c_str(),
                 command_path(command).c_str());
    return 2;
  }
  return 0;
}

int run_main(int argc, char** argv) {
  // Everything after "--" is the program and its arguments, never parsed as ours.
  int split = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      split = i;
      break;
    }
  }
  std::vector<std::string> program(argv + (split < argc ? split + 1 : argc), argv + argc);
  // mpirun spells it -np; CLI11 would read that as "-n p".
  std::vector<std::string> ours(argv, argv + split);
  for (std::string& a : ours)
    if (a == "-np")
      a = "--np";

  CLI::App app{"Strata: MPI performance tools, loaded at run time into unmodified programs",
               "strata"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "strata " STRATA_VERSION);
  strata::cli::launch_options launch;

  auto add_stack_options = [&](CLI::App* sub) {
    sub->add_option("--tools", launch.tools, "modules in order: a,b:key=value,c");
    sub->add_option("--config", launch.config, "config file listing the modules");
    sub->add_option("--mpi", launch.mpi, "MPI implementation (default: detected from PROG)")
        ->check(CLI::IsMember({"openmpi", "mpich"}));
  };
  CLI::App* exec = app.add_subcommand("exec", "run PROG under the tool stack (inside mpirun)");
  add_stack_options(exec);
  exec->add_flag("--no-check", launch.skip_check, "the stack was already checked")->group("");
  CLI::App* run = app.add_subcommand("run", "start an MPI job locally under the tool stack");
  add_stack_options(run);
  run->add_option("-n,--np", launch.ranks,
                  "the application's ranks (a module's tool ranks, the monitor's, come on top)")
      ->required()
      ->check(CLI::Range(1, 1 << 20));
  CLI::App* monitor = app.add_subcommand("monitor", "online monitoring: read rounds, plan a tree");
  monitor->require_subcommand(1);
  strata::cli::monitor_read_options monitor_read;
  CLI::App* monitor_read_cmd =
      monitor->add_subcommand("read", "reduce the rounds a transport=file job left in DIR");
  monitor_read_cmd->add_option("DIR", monitor_read.dir, "the job's monitor directory")->required();
  monitor_read_cmd->add_option("--filter", monitor_read.filter,
                               "raw, stats, histogram, classes or a plug-in .so");
  monitor_read_cmd->add_option("--filter-arg", monitor_read.filter_args,
                               "bins=N, metric=calls|time|bytes, class-events=mpi|GLOB");
  monitor_read_cmd->add_option("--fanout", monitor_read.fanout, "tree to reduce through")
      ->check(CLI::Range(2, 65536));
  monitor_read_cmd->add_option("-o,--output", monitor_read.output,
                               "JSON lines file (default: stdout)");
  std::string serve_file;
  std::string serve_bind = "127.0.0.1";
  int serve_port = 8087;
  std::string serve_web;
  CLI::App* monitor_serve =
      monitor->add_subcommand("serve", "live web view of a job's rounds (STRATA_MONITOR_OUT)");
  monitor_serve->add_option("FILE", serve_file, "the front end's JSON lines")->required();
  monitor_serve->add_option("--bind", serve_bind, "address to listen on");
  monitor_serve->add_option("--port", serve_port, "port (0: any free one)")
      ->check(CLI::Range(0, 65535));
  monitor_serve->add_option("--web", serve_web, "the view's files (default: installed ones)");
  int plan_ranks = 0;
  int plan_fanout = 2;
  CLI::App* monitor_plan = monitor->add_subcommand("plan", "tool ranks for P ranks and fanout K");
  monitor_plan->add_option("-n,--np", plan_ranks, "application ranks")
      ->required()
      ->check(CLI::Range(1, 1 << 24));
  monitor_plan->add_option("--fanout", plan_fanout, "fanout")->check(CLI::Range(2, 65536));
  CLI::App* modules =
      app.add_subcommand("modules", "list the modules and what they wrap; NAME: its options too");
  std::string module_name;
  modules->add_option("NAME", module_name, "one module, with its options");
  modules->add_option("--mpi", launch.mpi, "only this MPI implementation")
      ->check(CLI::IsMember({"openmpi", "mpich"}));
  CLI::App* patch = app.add_subcommand("patch", "turn a binary PMPI tool into a Strata module");
  std::string patch_in;
  std::string patch_out;
  patch->add_option("IN", patch_in, "the tool's shared object")->required();
  patch->add_option("OUT", patch_out, "the module to write")->required();

  CLI::App* report = app.add_subcommand("report", "render a job record for people or tools");
  std::string report_record;
  std::string report_format = "text";
  std::string report_model;
  report->add_option("RECORD", report_record, "job record (strata.job/1 JSON)")->required();
  report->add_option("--format", report_format, "text, json, csv or html");
  report->add_option("--model", report_model, "machine model (strata bench) for the estimate");
  CLI::App* bench = app.add_subcommand(
      "bench", "measure what each MPI operation should cost here: the machine model");
  strata::bench::bench_options bench_options;
  bench->add_option("-n,--np", bench_options.ranks, "ranks (base points up to this size)")
      ->check(CLI::Range(2, 1 << 16));
  bench->add_option("-o,--output", bench_options.output, "model file to write");
  bench->add_option("--mpi", bench_options.mpi, "MPI implementation")
      ->check(CLI::IsMember({"openmpi", "mpich"}));
  bench->add_option("--samples", bench_options.samples, "sample size per base point");
  bench->add_option("--max-bytes", bench_options.max_bytes, "largest message size");
  bench->add_option("--quantile", bench_options.quantile, "quantile of t_max");
  bench->add_option("--ops", bench_options.ops, "operations (default: all)");
  bench->add_option("--window-s", bench_options.window_s,
                    "fit window in seconds (default: the timer's resolution)");
  bench->add_option("--study", bench_options.study, "t_max against sample size for one operation");
  CLI::App* recover = app.add_subcommand(
      "recover", "turn the per-rank files of jobs that did not finalize into partial records");
  std::vector<std::string> recover_spools;
  recover->add_option("SPOOL", recover_spools, "spool directories")->required();

  CLI::App* analyze = app.add_subcommand(
      "analyze", "event graph of an OTF2 trace: operations per level and call site, wait states");
  std::string analyze_trace;
  analyze->add_option("TRACE", analyze_trace, "OTF2 archive (directory or anchor file)")
      ->required();
  bool analyze_json = false;
  bool analyze_csv = false;
  auto* json_flag = analyze->add_flag("--json", analyze_json, "JSON instead of text tables");
  analyze->add_flag("--csv", analyze_csv, "CSV instead of text tables")->excludes(json_flag);
  CLI::App* trace = app.add_subcommand("trace", "work with OTF2 traces");
  CLI::App* trace_export = trace->add_subcommand("export", "convert a trace to another format");
  trace->require_subcommand(1);
  std::string export_trace;
  std::string export_out;
  bool export_as_xml = false;
  trace_export->add_flag("--xml", export_as_xml, "the HieraAnalyses XML (one file per rank)")
      ->required();
  trace_export->add_option("TRACE", export_trace, "OTF2 archive")->required();
  trace_export->add_option("--out", export_out, "output directory (default: TRACE-xml)");
  CLI::App* site = app.add_subcommand("site", "site store: ingest job records, reports, mail");
  const strata::site::site_commands site_commands(*site);
  const strata::web::web_commands web_commands(*site); // token, serve

  const CLI::App* chosen = &app;
  if (const int status = check_command_words(app, ours, chosen); status != 0)
    return status;
  try {
    std::reverse(ours.begin() + 1, ours.end()); // CLI11 takes the arguments in reverse order
    app.parse(std::vector<std::string>(ours.begin() + 1, ours.end()));
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line naming the problem and where to read more, whatever CLI11 found.
    std::fprintf(stderr, "strata: error: %s: %s (see '%s --help')\n", command_path(chosen).c_str(),
                 e.what(), command_path(chosen).c_str());
    return 2;
  }
  launch.program = program;
  if (exec->parsed())
    return strata::cli::exec_command(launch);
  if (run->parsed())
    return strata::cli::run_command(launch);
  if (monitor_read_cmd->parsed())
    return strata::cli::monitor_read_command(monitor_read);
  if (monitor_serve->parsed())
    return strata::cli::monitor_serve_command(serve_file, serve_bind, serve_port,
                                              serve_web.empty() ? strata::cli::monitor_web_dir()
                                                                : serve_web);
  if (monitor_plan->parsed())
    return strata::cli::monitor_plan_command(plan_ranks, plan_fanout);
  if (modules->parsed())
    return strata::cli::modules_command(launch.mpi, module_name);
  if (patch->parsed())
    return strata::cli::patch_command(patch_in, patch_out);
  if (report->parsed())
    return strata::cli::report_command(report_record, report_format, report_model);
  if (bench->parsed())
    return strata::bench::bench_command(bench_options);
  if (recover->parsed())
    return strata::cli::recover_command(recover_spools);
  if (analyze->parsed())
    return strata::analyze::analyze_command(analyze_trace, analyze_json  ? "json"
                                                           : analyze_csv ? "csv"
                                                                         : "text");
  if (trace_export->parsed())
    return strata::analyze::export_xml_command(export_trace, export_out);
  if (site->parsed())
    return web_commands.chosen() ? web_commands.run() : site_commands.run();
  return 2;
}
} // namespace

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata: error: %s\n", e.what());
    return 2;
  }
}
