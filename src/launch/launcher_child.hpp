// `strata run` with tool ranks (the monitor's tree): the launcher runs as a child whose output
// passes through unchanged, read for the lines where it names the process whose end ended the
// job. Both MPIs end a whole job when one of its processes dies, and name that process by its
// rank (Open MPI) or pid (MPICH); when it was a tool rank, not one of the application's, one more
// line says so, since the launcher's words blame the application.
#pragma once

#include <string>
#include <vector>

namespace strata::launch {

// Marks the processes of one `strata run` (its value is unique to the run), for the run to learn
// each rank's pid from /proc while the job starts: MPICH names the dead process by its pid.
inline constexpr const char* run_marker_variable = "STRATA_RUN_ID";

// The process a launcher's line names as the one that ended the job, as far as that line tells.
struct ended_process {
  int rank = -1;   // Open MPI names the rank
  long pid = -1;   // MPICH names the pid
  std::string how; // "exited on signal 9 (Killed)", "EXIT CODE: 9"
};

// Reads one line of the launcher's output; true when it names the process (or, for MPICH, how
// the process named on the line before ended: `found` then gains `how`).
bool read_launcher_line(const std::string& line, ended_process& found);

// The tool rank whose end ended the job, or -1. Open MPI names the rank; MPICH names a pid, at
// times of a process it stopped while cleaning up, so there `first_ended` decides: the world rank
// of the process seen to end first (through a pidfd per process), alone in the wake that saw it
// (-1 when unknown: several ended between two looks, another was already ending, or the ranks
// were not all found in time).
int tool_rank_that_ended_the_job(const ended_process& named, int first_ended, int app_ranks);

// Whether a process may already have closed its files (its sockets, seen by the launcher), from
// its /proc/PID/stat: a zombie, or exiting with its memory given up. A process's pidfd wakes only
// at the very end of its exit, after its files closed; MPICH's launcher, woken by that close,
// kills the job's other processes, and one of them can end before the process that caused it.
// So the process seen to end first decides only while no other one may have closed its files:
// none of them could have been killed because of it yet.
bool files_may_be_closed_from_stat(const std::string& stat);

// A /proc file's text; empty when it cannot be read (a process that ended meanwhile).
std::string read_proc_file(const std::string& path);

// The same for a pid; true too when the process is gone or cannot be read.
bool files_may_be_closed(long pid);

// The line that says tool rank `rank` ended the job (`how`, from the launcher, may be "").
std::string tool_rank_ended_line(int rank, const std::string& how, int app_ranks,
                                 const std::string& launcher_name);

// The world rank a process's environment (NUL-separated, as /proc/PID/environ) gives, when it
// carries `marker` (NAME=VALUE); else -1.
int rank_in_environment(const std::string& environ, const std::string& marker);

// How long to wait before the next look in /proc for the job's ranks, in ms, after a look that
// waited `interval_ms`, `since_launch_ms` after the launch; -1: look no more. A look reads every
// process's environment: every 20 ms while the launcher starts (until a rank is found, for at
// most 10 s) and while more ranks appear, twice as long after each look that finds none new (up
// to a second), and none after the first minute (ranks on other nodes are never found here, and
// their ends cannot be watched anyway).
long next_rank_look_ms(long interval_ms, bool found_new, bool found_any, long since_launch_ms);

struct launcher_job {
  std::vector<std::string> args; // the launcher's command line
  std::string flavor;            // which stream carries its last words: Open MPI's standard
                                 // error, MPICH's standard output
  int app_ranks = 0;
  int processes = 0; // the application's ranks and the tool ranks
};

// Runs the launcher as a child (signals that would end `strata run` are passed on to it), its
// telling stream copied through as it comes, and returns its exit status (128 + signal when a
// signal ended it). Returns 127 with a message when it cannot start.
int run_launcher_child(const launcher_job& job);

} // namespace strata::launch
