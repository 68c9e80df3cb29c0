#include "hang/running_job.hpp"

#include <algorithm>

namespace strata::hang {

job_look look_at_job(tree_watch& watch, const running_job& job, uint64_t now_ns,
                     uint64_t threshold_ns) {
  job_look out;
  state_batch merged;
  const tree_watch::step step =
      job.spool.empty() ? tree_watch::step::files
                        : watch.look(job.spool, job.key, job.rank0_host, merged, out.tree_problem);
  if (step == tree_watch::step::wait)
    return out;
  loaded_states loaded;
  out.through_tree = step == tree_watch::step::answered;
  if (out.through_tree) {
    loaded.states = std::move(merged.states);
  } else {
    loaded = load_states(job.files);
    if (!loaded.error.empty()) {
      out.result = job_look::step::unreadable;
      out.problem = loaded.error;
      return out;
    }
  }
  out.latest_ns = latest_time(loaded.states);
  out.d = diagnose(loaded.states, std::max(now_ns, out.latest_ns), threshold_ns);
  if (out.through_tree)
    note_tree(out.d, merged);
  out.result = job_look::step::judged;
  return out;
}

} // namespace strata::hang
