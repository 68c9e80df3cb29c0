// `strata site ingest`: moves the job records of spool directories into the store. Per-rank
// files of jobs that never finalized are merged first (profiler::recover_spool). A record
// belongs to the owner of its spool file; a record that cannot be read is moved to the
// quarantine directory with a `.reason` file beside it and the ingest goes on. A record leaves
// the spool only after the transaction holding it has committed.
#pragma once

#include "site/regressions.hpp"
#include "site/store.hpp"

#include <string>
#include <vector>

namespace strata::site {

struct ingest_options {
  std::vector<std::string> spools;
  std::string quarantine; // empty: SPOOL/quarantine of each spool
  size_t batch = 5000;    // records per transaction
  bool recover = true;    // merge per-rank files first
  // Transactions at once, each on a connection of its own, where the backend gains from it
  // (store::another_writer: PostgreSQL); SQLite has one writer whatever this says.
  unsigned writers = 2;
  // Score each job against its program's earlier runs (site/regressions.hpp) and keep the
  // regressions; off only for bulk loads whose jobs need no flags.
  bool score = true;
  regression_options regressions;
};

struct ingest_summary {
  std::int64_t records = 0;    // record files read
  std::int64_t stored = 0;     // new in the store
  std::int64_t duplicates = 0; // already stored (removed from the spool all the same)
  std::int64_t quarantined = 0;
  std::int64_t recovered = 0; // records merged from per-rank files
  std::int64_t owner_mismatches = 0;
  std::int64_t flagged = 0;          // regressions found
  std::vector<std::string> problems; // one line each
  std::string summary_line() const;
};

// The parse workers run at a lower priority than the store's writer thread. Up to two chunks
// are parsed at once, so four workers, the writer, the remover and the reading thread shared
// the two cores of the benchmark machine, and the writer, the one thread every record passes
// through, got about half a core; the workers only need the cycles the writer leaves. Five nice
// levels below the thread that starts them (CFS weight 335 against 1024), at most 19, and not
// more: where other programs fill the cores the workers still get a third of a share each, so
// the ingest slows down but never stalls (docs/PERFORMANCE.md, "Site store").
inline constexpr int parse_worker_niceness_step = 5;
// Raises the calling thread's nice value (and only that thread's) by the step above.
void lower_this_threads_priority();

// Sets glibc's trim and mmap thresholds and top pad for the process (see ingest.cpp). Leaves
// one row in the store's `ingests` (site/health.hpp).
// Throws store_error when the store fails; what was committed before stays committed and
// its files are gone from the spool, the rest stays in the spool for the next run.
ingest_summary ingest(store& db, const ingest_options& options);

} // namespace strata::site
