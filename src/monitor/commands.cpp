#include "monitor/commands.hpp"
#include "common/http_server.hpp"

#include "monitor/metrics.hpp"

#include "launch/launch.hpp"
#include "monitor/filter.hpp"
#include "monitor/frontend.hpp"
#include "monitor/tree.hpp"

#include <CLI/CLI.hpp>
#include <httplib.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace strata::monitor {

int monitor_read_command(const monitor_read_options& o) {
  overlay::filter_options options;
  for (const std::string& kv : o.filter_args) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::fprintf(stderr, "strata: error: --filter-arg '%s' is not key=value\n", kv.c_str());
      return 2;
    }
    options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  std::string error;
  auto f = overlay::make_filter(o.filter, options, error);
  if (f == nullptr) {
    std::fprintf(stderr, "strata: error: %s\n", error.c_str());
    return 2;
  }
  const std::vector<std::string> lines = overlay::read_round_files(o.dir, *f, o.fanout, error);
  if (!error.empty())
    std::fprintf(stderr, "strata: %s%s\n", lines.empty() ? "error: " : "", error.c_str());
  std::FILE* out = stdout;
  if (!o.output.empty() && o.output != "-") {
    out = std::fopen(o.output.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "strata: error: %s: cannot write\n", o.output.c_str());
      return 2;
    }
  }
  for (const std::string& l : lines)
    std::fprintf(out, "%s\n", l.c_str());
  if (out != stdout)
    std::fclose(out);
  return lines.empty() ? 1 : 0;
}

std::string monitor_web_dir() {
  return launch::find_layout(launch::self_executable()).prefix + "/share/strata/web/monitor";
}

int monitor_serve_command(const std::string& file, const std::string& bind, int port,
                          const std::string& web_dir) {
  std::ifstream probe(web_dir + "/index.html");
  if (!probe) {
    std::fprintf(stderr,
                 "strata: error: no monitor view in %s (was Strata built with node and npm?)\n",
                 web_dir.c_str());
    return 2;
  }
  httplib::Server server;
  server.set_default_headers(security_headers());
  if (!server.set_mount_point("/", web_dir)) {
    std::fprintf(stderr, "strata: error: %s: cannot serve this directory\n", web_dir.c_str());
    return 2;
  }
  // Complete lines from the `from`-th on, as one JSON array: the page keeps what it has.
  server.Get("/rounds", [file](const httplib::Request& request, httplib::Response& response) {
    size_t from = 0;
    if (request.has_param("from"))
      from =
          static_cast<size_t>(std::strtoull(request.get_param_value("from").c_str(), nullptr, 10));
    std::ifstream in(file);
    std::string body = "[";
    std::string line;
    size_t index = 0;
    bool first = true;
    while (std::getline(in, line)) {
      if (in.eof()) // a line still being written has no newline yet
        break;
      if (index++ < from || line.empty())
        continue;
      body += (first ? "" : ",") + line;
      first = false;
    }
    body += "]";
    response.set_header("Cache-Control", "no-store");
    response.set_content(body, "application/json");
  });
  listen_exclusively(server);
  const int bound =
      port == 0 ? server.bind_to_any_port(bind) : (server.bind_to_port(bind, port) ? port : -1);
  if (bound < 0) {
    std::fprintf(stderr, "strata: error: cannot listen on %s:%d: %s\n", bind.c_str(), port,
                 why_not_listening(bind, port).c_str());
    return 2;
  }
  server.Get("/metrics", [file](const httplib::Request&, httplib::Response& response) {
    std::ifstream in(file);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    response.set_content(monitor_metrics(text, job_of_rounds_file(file)),
                         "text/plain; version=0.0.4; charset=utf-8");
  });
  std::printf("serving http://%s:%d/ (rounds from %s)\n", bind.c_str(), bound, file.c_str());
  std::fflush(stdout);
  return server.listen_after_bind() ? 0 : 2;
}

int monitor_plan_command(int ranks, int fanout) {
  const int tools = overlay::tool_ranks_for(ranks, fanout);
  std::printf("%d application ranks, fanout %d: %d tool ranks, %d processes\n", ranks, fanout,
              tools, ranks + tools);
  return 0;
}

namespace {
class monitor_commands final : public cli::wing_commands {
public:
  explicit monitor_commands(CLI::App& strata) {
    CLI::App* monitor =
        strata.add_subcommand("monitor", "online monitoring: read rounds, serve, plan a tree");
    monitor->require_subcommand(1);
    read_ = monitor->add_subcommand("read", "reduce the rounds a transport=file job left in DIR");
    read_->add_option("DIR", read_options_.dir, "the job's monitor directory")->required();
    read_->add_option("--filter", read_options_.filter,
                      "raw, stats, histogram, classes or a plug-in .so");
    read_->add_option("--filter-arg", read_options_.filter_args,
                      "bins=N, metric=calls|time|bytes, class-events=mpi|GLOB");
    read_->add_option("--fanout", read_options_.fanout, "tree to reduce through")
        ->check(CLI::Range(2, 65536));
    read_->add_option("-o,--output", read_options_.output, "JSON lines file (default: stdout)");
    serve_ =
        monitor->add_subcommand("serve", "live web view of a job's rounds (STRATA_MONITOR_OUT)");
    serve_->add_option("FILE", serve_file_, "the front end's JSON lines")->required();
    serve_->add_option("--bind", serve_bind_, "address to listen on");
    serve_->add_option("--port", serve_port_, "port (0: any free one)")
        ->check(CLI::Range(0, 65535));
    serve_->add_option("--web", serve_web_, "the view's files (default: installed ones)");
    plan_ = monitor->add_subcommand("plan", "tool ranks for P ranks and fanout K");
    plan_->add_option("-n,--np", plan_ranks_, "application ranks")
        ->required()
        ->check(CLI::Range(1, 1 << 24));
    plan_->add_option("--fanout", plan_fanout_, "fanout")->check(CLI::Range(2, 65536));
  }

  [[nodiscard]] std::optional<int> run() const override {
    if (read_->parsed())
      return monitor_read_command(read_options_);
    if (serve_->parsed())
      return monitor_serve_command(serve_file_, serve_bind_, serve_port_,
                                   serve_web_.empty() ? monitor_web_dir() : serve_web_);
    if (plan_->parsed())
      return monitor_plan_command(plan_ranks_, plan_fanout_);
    return std::nullopt;
  }

private:
  monitor_read_options read_options_;
  std::string serve_file_, serve_bind_ = "127.0.0.1", serve_web_;
  int serve_port_ = 8087;
  int plan_ranks_ = 0, plan_fanout_ = 2;
  CLI::App* read_ = nullptr;
  CLI::App* serve_ = nullptr;
  CLI::App* plan_ = nullptr;
};
} // namespace

std::unique_ptr<cli::wing_commands> add_monitor_commands(CLI::App& strata) {
  return std::make_unique<monitor_commands>(strata);
}

} // namespace strata::monitor
