// `strata hang DIR_OR_FILES`: the diagnosis from the per-rank state files a job leaves in its
// spool (JOB.rankR.hang), as text or JSON. No MPI.
#pragma once

#include "common/wing_commands.hpp"
#include "hang/state.hpp"

#include <memory>
#include <string>
#include <vector>

namespace strata::hang {

struct hang_options {
  std::vector<std::string> inputs; // directories and state files
  std::string format = "text";
  std::string job;          // which job's files in a directory holding several
  double hang_after_s = 10; // a rank waiting this long in one call, nobody completing any: hung
  std::string now_job;      // --now: a running job, by its id or its files' key
};

// The states named by `inputs`, or one line (without "strata: error: ") saying what is wrong.
struct loaded_states {
  std::vector<rank_state> states;
  std::string error;
};
loaded_states load_states(const hang_options& o);

// The time to judge the states at: now while their writers are alive (a heartbeat within the
// threshold), else the last heartbeat (a job that ended or was killed, as it was then).
uint64_t judging_time(const std::vector<rank_state>& states, uint64_t threshold_ns,
                      uint64_t now_ns);

// Prints the diagnosis; 0 when printed, 2 for bad input. With `now_job`: that job's, as it is
// now, from the spools in `inputs` (else the usual ones); 1 when the job is not running.
int hang_command(const hang_options& o);

// A state is alive when its heartbeat is this recent (the profile writes it ten times a second).
inline constexpr uint64_t alive_within_ns = 5'000'000'000ULL;

// Whether the files' key `key` ("JOB-PID", the profile's) is of the job `job` (the key itself,
// or the id of the batch system's job before "-PID").
bool key_is_of_job(const std::string& key, const std::string& job);

// The option --hang-after DURATION on `command`, into `seconds`: 0 or more where `zero_allowed`
// (`strata hang`: 0 judges at once), else above 0 (`strata run`: 0 would watch nothing).
CLI::Option* add_hang_after_option(CLI::App& command, double& seconds, bool zero_allowed,
                                   const std::string& help);

// Registers `hang` on `strata`.
std::unique_ptr<cli::wing_commands> add_hang_commands(CLI::App& strata);

} // namespace strata::hang
