// `strata run --hang-after SECONDS [--on-hang report|abort]`: the launcher as a child, and the
// job's hang state files (src/hang) watched meanwhile.
#pragma once

#include <string>
#include <vector>

namespace strata::launch {

// Where the ranks link their state files for the command that started them to find
// (the profile module reads it).
inline constexpr const char* hang_watch_variable = "STRATA_HANG_WATCH_DIR";

struct hang_watch_settings {
  double after_s = 0; // 0: no watch
  bool abort = false; // end the job once it hangs, else only say why
};

// A directory for the job's state files (made now), or "" with `error` set.
std::string make_hang_watch_dir(std::string& error);

// Runs `args` (the launcher command) and watches the state files in `dir`: once a rank has waited
// `after_s` inside one MPI call and no rank completed one meanwhile, prints the diagnosis to
// standard error, and with `abort` ends the job (exit status 3). Otherwise the launcher's status.
int run_watching_hangs(const std::vector<std::string>& args, const std::string& dir,
                       const hang_watch_settings& settings);

} // namespace strata::launch
