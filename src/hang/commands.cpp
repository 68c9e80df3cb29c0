#include "hang/commands.hpp"
#include "hang/diagnose.hpp"
#include "hang/running_job.hpp"

#include "config/options.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

namespace strata::hang {
namespace {

// "JOB.rank12.hang" -> "JOB"; "" when the name is not of that form.
std::string job_of(const std::string& file_name) {
  if (!file_name.ends_with(".hang"))
    return "";
  const size_t rank = file_name.rfind(".rank");
  return rank == std::string::npos ? "" : file_name.substr(0, rank);
}

// The spools a job's files may be in when none is named: the profile's own list (the configured
// one, the install's, ~/.strata/spool, /tmp/strata-spool-UID).
std::vector<std::string> usual_spools() {
  std::vector<std::string> out;
  if (const char* configured = std::getenv("STRATA_SPOOL"); configured != nullptr && *configured)
    out.emplace_back(configured);
  out.emplace_back(STRATA_DEFAULT_SPOOL);
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    out.push_back(std::string(home) + "/.strata/spool");
  out.push_back("/tmp/strata-spool-" + std::to_string(::getuid()));
  return out;
}

std::string seconds_text(uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", static_cast<double>(ns) / 1e9);
  return text;
}

// --now: the running job's states, judged as of now.
int hang_now(const hang_options& o) {
  namespace fs = std::filesystem;
  const std::vector<std::string> spools = o.inputs.empty() ? usual_spools() : o.inputs;
  std::map<std::string, std::string> keys; // key -> its spool
  std::string looked;
  for (const std::string& spool : spools) {
    looked += (looked.empty() ? "" : ", ") + spool;
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(spool, ec)) {
      const std::string key = job_of(e.path().filename().string());
      if (!key.empty() && key_is_of_job(key, o.now_job))
        keys.emplace(key, spool);
    }
  }
  if (keys.empty()) {
    std::fprintf(stderr,
                 "strata: error: job %s is unknown: no hang states of it in %s (a job under the "
                 "profile keeps them while it runs)\n",
                 o.now_job.c_str(), looked.c_str());
    return 2;
  }
  const auto threshold = static_cast<uint64_t>(o.hang_after_s * 1e9);
  std::vector<std::pair<std::string, diagnosis>> running;
  std::string stopped;
  for (const auto& [key, spool] : keys) {
    // A job under the monitor's tree (transport=tree) has its tool ranks read the files and
    // merge them; without one, or when it does not answer, the files are read here. A job whose
    // rank 0 stopped writing is not asked.
    running_job job;
    job.key = key;
    job.files = o;
    job.files.inputs = {spool};
    job.files.job = key;
    const state_read_result rank0 = read_state_file(spool + "/" + key + ".rank0.hang");
    if (!rank0.ok() || latest_time({*rank0.state}) + alive_within_ns >= realtime_ns())
      job.spool = spool;
    if (rank0.ok())
      job.rank0_host = rank0.state->host;
    tree_watch tree;
    job_look look = look_at_job(tree, job, realtime_ns(), threshold);
    while (look.result == job_look::step::wait) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      look = look_at_job(tree, job, realtime_ns(), threshold);
    }
    if (!look.tree_problem.empty())
      std::fprintf(stderr, "strata: %s: reading the files\n", look.tree_problem.c_str());
    if (look.result == job_look::step::unreadable) {
      std::fprintf(stderr, "strata: error: %s\n", look.problem.c_str());
      return 2;
    }
    const uint64_t now = realtime_ns();
    if (look.latest_ns + alive_within_ns >= now) {
      running.emplace_back(key, std::move(look.d));
    } else {
      stopped += "strata: job " + key + " is not running: its ranks last wrote their states " +
                 seconds_text(now - look.latest_ns) + " s ago (`strata hang " + spool + " --job " +
                 key + "` tells how it was then)\n";
    }
  }
  if (running.empty()) {
    std::fputs(stopped.c_str(), stderr);
    return 1;
  }
  if (running.size() > 1) {
    std::string names;
    for (const auto& [key, d] : running)
      names += (names.empty() ? "" : ", ") + key;
    std::fprintf(stderr, "strata: error: several running jobs are %s: %s; name one\n",
                 o.now_job.c_str(), names.c_str());
    return 2;
  }
  const diagnosis& d = running.front().second;
  const std::string text = o.format == "json" ? format_json(d) : format_text(d);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

} // namespace

bool key_is_of_job(const std::string& key, const std::string& job) {
  return !job.empty() && (key == job || (key.starts_with(job + "-") &&
                                         key.find('-', job.size() + 1) == std::string::npos));
}

loaded_states load_states(const hang_options& o) {
  namespace fs = std::filesystem;
  loaded_states out;
  std::vector<std::string> files;
  for (const std::string& input : o.inputs) {
    std::error_code ec;
    if (!fs::is_directory(input, ec)) {
      files.push_back(input);
      continue;
    }
    std::map<std::string, std::vector<std::string>> by_job;
    for (const fs::directory_entry& e : fs::directory_iterator(input, ec)) {
      const std::string name = e.path().filename().string();
      if (const std::string job = job_of(name); !job.empty() && (o.job.empty() || job == o.job))
        by_job[job].push_back(e.path().string());
    }
    if (ec) {
      out.error = input + ": cannot list (" + ec.message() + ")";
      return out;
    }
    if (by_job.empty()) {
      out.error = input + ": no hang state files (JOB.rankR.hang)" +
                  (o.job.empty() ? "" : " of job " + o.job);
      return out;
    }
    if (by_job.size() > 1) {
      std::string jobs;
      for (const auto& [job, paths] : by_job)
        jobs += (jobs.empty() ? "" : ", ") + job;
      out.error = input + " holds the states of several jobs (" + jobs + "): choose one with --job";
      return out;
    }
    std::vector<std::string>& paths = by_job.begin()->second;
    std::sort(paths.begin(), paths.end());
    files.insert(files.end(), paths.begin(), paths.end());
  }
  std::set<int32_t> seen;
  for (const std::string& file : files) {
    state_read_result read = read_state_file(file);
    if (!read.ok()) {
      out.error = read.error;
      return out;
    }
    if (!out.states.empty() && read.state->world_size != out.states.front().world_size) {
      out.error = file + ": rank " + std::to_string(read.state->world_rank) + " of " +
                  std::to_string(read.state->world_size) + " ranks, but " +
                  out.states.front().source + " is of " +
                  std::to_string(out.states.front().world_size) + ": not the same job";
      return out;
    }
    if (!seen.insert(read.state->world_rank).second) {
      out.error = file + ": a second state for rank " + std::to_string(read.state->world_rank) +
                  ": not the same job";
      return out;
    }
    out.states.push_back(std::move(*read.state));
  }
  return out;
}

uint64_t judging_time(const std::vector<rank_state>& states, uint64_t threshold_ns,
                      uint64_t now_ns) {
  const uint64_t latest = latest_time(states);
  return latest + threshold_ns >= now_ns ? std::max(now_ns, latest) : latest;
}

int hang_command(const hang_options& o) {
  if (!(o.hang_after_s >= 0) || !std::isfinite(o.hang_after_s)) {
    std::fprintf(stderr, "strata: error: --hang-after must be 0 or more seconds\n");
    return 2;
  }
  if (!o.now_job.empty())
    return hang_now(o);
  if (o.inputs.empty()) {
    std::fprintf(stderr, "strata: error: name a spool directory or state files (or --now JOB)\n");
    return 2;
  }
  const loaded_states loaded = load_states(o);
  if (!loaded.error.empty()) {
    std::fprintf(stderr, "strata: error: %s\n", loaded.error.c_str());
    return 2;
  }
  const auto threshold = static_cast<uint64_t>(o.hang_after_s * 1e9);
  const diagnosis d =
      diagnose(loaded.states, judging_time(loaded.states, threshold, realtime_ns()), threshold);
  const std::string text = o.format == "json" ? format_json(d) : format_text(d);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

CLI::Option* add_hang_after_option(CLI::App& command, double& seconds, bool zero_allowed,
                                   const std::string& help) {
  return command
      .add_option_function<std::string>(
          "--hang-after",
          [&seconds, zero_allowed](const std::string& value) {
            const std::optional<double> s = config::parse_duration(value);
            if (!s || *s < 0 || (*s == 0 && !zero_allowed))
              throw CLI::ValidationError(
                  "--hang-after: '" + value + "' is not a duration " +
                  (zero_allowed ? "such as 10, 10s or 5m" : "above 0 such as 90, 90s or 5m"));
            seconds = *s;
          },
          help)
      ->type_name("DURATION");
}

namespace {
class hang_commands final : public cli::wing_commands {
public:
  explicit hang_commands(CLI::App& strata) {
    hang_ = strata.add_subcommand(
        "hang", "why a job stopped making progress: where each rank waits, deadlocks, and who "
                "they wait for (from the job's hang state files)");
    hang_->add_option("inputs", o_.inputs,
                      "a spool directory or JOB.rankR.hang files (with --now: the spools to look "
                      "in, else the usual ones)");
    hang_->add_option("--now", o_.now_job,
                      "a running job, by its id (the batch system's) or its files' key: its "
                      "diagnosis as of now");
    hang_->add_option("--format", o_.format, "text for people, json for tools")
        ->check(CLI::IsMember({"text", "json"}));
    hang_->add_option("--job", o_.job, "the job whose files to read, in a directory of several");
    add_hang_after_option(*hang_, o_.hang_after_s, true,
                          "how long a rank must wait in one call (10, 10s, 5m), with no rank "
                          "completing any, to count as hung (default 10 s)");
  }

  [[nodiscard]] std::optional<int> run() const override {
    if (hang_->parsed())
      return hang_command(o_);
    return std::nullopt;
  }

private:
  hang_options o_;
  CLI::App* hang_ = nullptr;
};
} // namespace

std::unique_ptr<cli::wing_commands> add_hang_commands(CLI::App& strata) {
  return std::make_unique<hang_commands>(strata);
}

} // namespace strata::hang
