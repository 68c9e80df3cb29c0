// The site spool: where job records and per-rank files go, written so that nothing is lost and
// nothing is half-written, and `strata recover`, which turns the per-rank files of jobs that
// never finalized into records marked partial. No MPI here.
#pragma once

#include "profiler/rank_file.hpp"

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

// Where a job's files may go, in order: the configured spool (STRATA_SPOOL, else the install's
// default), ~/.strata/spool, /tmp/strata-spool-UID.
std::vector<std::string> spool_candidates(const char* configured,
                                          const std::string& install_default, const char* home,
                                          unsigned uid);

// Why DIR cannot be a spool ("spool DIR is not writable (...)", "... is not a directory"); empty
// when it is a writable directory (made, with its parents, if missing).
std::string spool_unusable(const std::string& dir);

// A rank's file "<spool>/<file_name>" in the first of `spools`, from `first` on, that is a
// writable directory with room for all of it (rank_file.hpp reserves the whole file: a full
// disk is found here, not by a store into the mapping).
struct placed_rank_file {
  static constexpr size_t nowhere = ~size_t{0};
  size_t spool = nowhere; // index into `spools`
  rank_mapping mapping;
  std::string why_not_first; // why spools[first] was not used, empty when it was
};
placed_rank_file place_rank_file(const std::vector<std::string>& spools, size_t first,
                                 const std::string& file_name,
                                 const std::vector<std::string>& names, uint32_t callsite_capacity,
                                 uint32_t thread_arrays);

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
