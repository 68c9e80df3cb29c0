// A running job's diagnosis as the ones who watch it make it (rank 0's hang_after, `strata run
// --hang-after`, `strata hang --now`): through the monitor's tree when the job has one (its tool
// ranks read the state files, tree_ask.hpp), else from the files; then the analysis, with what
// the tree said of the path the states took. No MPI.
#pragma once

#include "hang/commands.hpp"
#include "hang/diagnose.hpp"
#include "hang/tree_ask.hpp"

#include <cstdint>
#include <string>

namespace strata::hang {

struct running_job {
  // The spool of the job's files and their key, where its tree's door is; spool empty: the tree
  // is not asked.
  std::string spool, key;
  std::string rank0_host; // a door naming another host is not this job's ("": any)
  hang_options files;     // what to read when the tree does not answer (inputs, job)
};

struct job_look {
  enum class step {
    wait,       // the tree was asked: look again later
    judged,     // `d` holds the diagnosis
    unreadable, // the files could not be read (`problem` says why): a rank still making its file
  };
  step result = step::wait;
  diagnosis d;
  uint64_t latest_ns = 0; // judged: the states' last heartbeat
  bool through_tree = false;
  std::string problem;      // unreadable: the files' error
  std::string tree_problem; // the tree's answer was damaged (the files were read instead)
};

// One look: the tree asked (or its answer taken) through `watch`, else the files read, and the
// states judged as of `now_ns` (or their last heartbeat, when later) against `threshold_ns`.
job_look look_at_job(tree_watch& watch, const running_job& job, uint64_t now_ns,
                     uint64_t threshold_ns);

} // namespace strata::hang
