#include "profiler/spool.hpp"

#include "profiler/communication.hpp"

#include "common/atomic_file.hpp"
#include "common/process.hpp"
#include "profiler/job_figures.hpp"
#include "profiler/rank_file.hpp"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace strata::profiler {

std::string write_with_deadline(const std::string& path, const std::string& text,
                                std::chrono::milliseconds timeout) {
  struct shared_result {
    std::mutex lock;
    std::condition_variable done;
    bool finished = false;
    std::string error;
  };
  auto result = std::make_shared<shared_result>();
  std::thread writer([result, path, text] {
    std::string error = common::write_atomically(path, text);
    std::lock_guard<std::mutex> guard(result->lock);
    result->error = std::move(error);
    result->finished = true;
    result->done.notify_all();
  });
  std::unique_lock<std::mutex> guard(result->lock);
  if (!result->done.wait_for(guard, timeout, [&] { return result->finished; })) {
    writer.detach(); // stuck in the kernel; it finishes or dies with the process
    return path + ": no answer from the file system after " + std::to_string(timeout.count()) +
           " ms";
  }
  guard.unlock();
  writer.join();
  return result->error;
}

std::vector<std::string> spool_candidates(const char* configured,
                                          const std::string& install_default, const char* home,
                                          unsigned uid) {
  std::vector<std::string> spools;
  spools.push_back(configured != nullptr && configured[0] != '\0' ? configured : install_default);
  if (home != nullptr && home[0] != '\0')
    spools.push_back(std::string(home) + "/.strata/spool");
  spools.push_back("/tmp/strata-spool-" + std::to_string(uid));
  return spools;
}

std::string spool_unusable(const std::string& dir) {
  errno = 0;
  if (common::make_writable_dir(dir))
    return {};
  if (errno == ENOTDIR)
    return "spool " + dir + " is not a directory";
  return "spool " + dir + " is not writable (" + std::strerror(errno == 0 ? EACCES : errno) + ")";
}

placed_rank_file place_rank_file(const std::vector<std::string>& spools, size_t first,
                                 const std::string& file_name,
                                 const std::vector<std::string>& names, uint32_t callsite_capacity,
                                 uint32_t thread_arrays) {
  placed_rank_file placed;
  for (size_t i = first; i < spools.size(); ++i) {
    std::string why = spool_unusable(spools[i]);
    if (why.empty()) {
      placed.mapping =
          create_rank_file(spools[i] + "/" + file_name, names, callsite_capacity, thread_arrays);
      if (placed.mapping.ok()) {
        placed.spool = i;
        return placed;
      }
      why = "spool " + spools[i] + " cannot hold " + placed.mapping.error;
    }
    if (i == first)
      placed.why_not_first = std::move(why);
  }
  return placed;
}

std::string profile_twin(const std::string& record_name) {
  const std::string suffix = std::string(overhead_key_suffix) + ".json";
  if (record_name.size() <= suffix.size() ||
      record_name.compare(record_name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return {};
  return record_name.substr(0, record_name.size() - suffix.size()) + ".json";
}

namespace {

// "<key>.rank<R>.prof" -> key; empty for other files.
std::string key_of_rank_file(const std::string& name) {
  const size_t suffix = name.rfind(".prof");
  const size_t rank = name.rfind(".rank");
  if (suffix == std::string::npos || suffix + 5 != name.size() || rank == std::string::npos ||
      rank >= suffix)
    return {};
  return name.substr(0, rank);
}

bool process_alive(const rank_header& h) {
  char host[64] = {0};
  ::gethostname(host, sizeof(host) - 1);
  if (std::strncmp(host, h.host, sizeof(host)) != 0 || h.pid == 0)
    return false; // another host: a rank file there is only seen once the job is over
  return common::process_runs(h.pid);
}

void quarantine(const std::string& spool, const std::string& file, const std::string& reason,
                recovery& r) {
  const std::string dir = spool + "/quarantine";
  common::make_writable_dir(dir);
  const std::string base = file.substr(file.rfind('/') + 1);
  if (::rename(file.c_str(), (dir + "/" + base).c_str()) == 0)
    common::write_atomically(dir + "/" + base + ".reason", reason + "\n");
  r.problems.push_back(reason + " (moved to " + dir + ")");
}

} // namespace

std::vector<recovery> recover_spool(const std::string& spool) {
  std::map<std::string, std::vector<std::string>> jobs;
  DIR* d = ::opendir(spool.c_str());
  if (d == nullptr)
    return {{"", "", 0, {spool + ": " + std::strerror(errno)}}};
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (std::string key = key_of_rank_file(name); !key.empty())
      jobs[key].push_back(spool + "/" + name);
  }
  ::closedir(d);

  std::vector<recovery> out;
  for (auto& [key, files] : jobs) {
    recovery r;
    r.job_key = key;
    std::vector<rank_data> ranks;
    bool running = false;
    for (const std::string& file : files) {
      read_result rr = read_rank_file(file);
      if (!rr.error.empty()) {
        quarantine(spool, file, rr.error, r);
        continue;
      }
      running = running || process_alive(rr.data.header);
      ranks.push_back(std::move(rr.data));
    }
    if (running) {
      r.problems.push_back(key + ": still running, left alone");
      out.push_back(std::move(r));
      continue;
    }
    if (ranks.empty()) {
      out.push_back(std::move(r));
      continue;
    }
    // In rank order, so that ties in the spread over ranks go to the lower rank, as at finalize.
    std::sort(ranks.begin(), ranks.end(),
              [](const rank_data& a, const rank_data& b) { return a.header.rank < b.header.rank; });
    job_figures job;
    job.partial = true;
    for (const rank_data& rank : ranks)
      add_rank(job, rank);
    record::job_record rec = to_record(job);
    // The pairs, when every rank left its file of them (a job of few enough ranks).
    pair_list pairs;
    size_t pair_files = 0;
    for (const rank_data& rank : ranks) {
      pair_list one;
      std::string error;
      if (::access(pairs_file_of(rank.path).c_str(), F_OK) != 0)
        continue;
      if (!read_pairs_file(pairs_file_of(rank.path), one, error)) {
        r.problems.push_back(error + "; the record has no communication section");
        pair_files = ranks.size() + 1;
        break;
      }
      combine_pairs(pairs, std::move(one));
      ++pair_files;
    }
    if (pair_files == ranks.size())
      rec.communication = communication_of(pairs);
    const std::string path = spool + "/" + key + ".json";
    if (std::string error = common::write_atomically(path, record::to_json(rec)); !error.empty()) {
      r.problems.push_back(error);
    } else {
      r.record_path = path;
      r.ranks_read = static_cast<int>(ranks.size());
      for (const rank_data& rank : ranks) {
        ::unlink(rank.path.c_str());
        ::unlink(pairs_file_of(rank.path).c_str());
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace strata::profiler
