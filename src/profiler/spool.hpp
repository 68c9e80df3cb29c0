// The site spool: where job records and per-rank files go, written so that nothing is lost and
// nothing is half-written, and `strata recover`, which turns the per-rank files of jobs that
// never finalized into records marked partial. No MPI here.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace strata::profiler {

// Writes atomically (common/atomic_file.hpp), giving up after `timeout`: a hung file system must
// never hang the job. The writer thread, stuck in the kernel, then finishes or dies with the
// process. Returns an error message, empty on success.
std::string write_with_deadline(const std::string& path, const std::string& text,
                                std::chrono::milliseconds timeout);

// A job's files in the spool: the profile's "<key>.json" and "<key>.rankR.prof"; the overhead
// module's (which can run beside it) "<key>.overhead.json" and "<key>.overhead.rankR.prof".
inline constexpr std::string_view overhead_key_suffix = ".overhead";
// For the overhead module's record "<key>.overhead.json": "<key>.json", the profile's record of
// the same job run; else empty.
std::string profile_twin(const std::string& record_name);

struct spool_choice {
  std::string dir;     // empty when nothing at all can be written
  std::string message; // one line when the configured spool could not be used
};
// The configured spool (STRATA_SPOOL, else the install's default), else ~/.strata/spool, else
// /tmp/strata-spool-UID.
spool_choice choose_spool(const char* configured, const std::string& install_default,
                          const char* home, unsigned uid);

struct recovery {
  std::string job_key;
  std::string record_path; // written record, empty when nothing was written
  int ranks_read = 0;
  std::vector<std::string> problems; // one line each: unreadable files, skipped jobs
};

// For every job with per-rank files in `spool` whose processes are gone: merges what the ranks
// counted into a record marked partial (`<key>.json` in the spool), then removes the rank files.
// A job that still has a live rank on this host is left alone. Corrupt rank files are moved to
// `spool/quarantine/` with the reason beside them.
std::vector<recovery> recover_spool(const std::string& spool);

} // namespace strata::profiler
