// What Strata's SPANK plugin costs a task (bench/run_slurm.sh): in a fresh process per sample,
// as slurmstepd forks each task, the decision for one program (plan_task: libelf loaded, the
// executable read) and, inside a Slurm job, the job's facts asked of slurmctld
// (load_step_facts, once per step and node). Prints the median and the largest, in ms.
#include "launch/launch.hpp"
#include "slurm/step_facts.hpp"
#include "slurm/task_setup.hpp"

#include <slurm/slurm.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

double ms_in_child(int (*work)(const char*), const char* argument, bool& ok) {
  int fds[2];
  if (::pipe(fds) != 0)
    return -1;
  const pid_t child = ::fork();
  if (child == 0) {
    const auto t0 = std::chrono::steady_clock::now();
    const int result = work(argument);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const double sample[2] = {ms, static_cast<double>(result)};
    (void)!::write(fds[1], sample, sizeof(sample));
    std::_Exit(0);
  }
  ::close(fds[1]);
  double sample[2] = {-1, 0};
  (void)!::read(fds[0], sample, sizeof(sample));
  ::close(fds[0]);
  ::waitpid(child, nullptr, 0);
  ok = sample[1] > 0;
  return sample[0];
}

const char* g_prefix = "";

const char* variable(const char* name) {
  return std::getenv(name);
}

int plan(const char* program) {
  const strata::launch::layout where{g_prefix};
  const auto setup =
      strata::slurm::plan_task(program, std::getenv("PATH"), "profile", where, variable);
  return static_cast<int>(setup.environment.size());
}

int facts(const char* job) {
  return strata::slurm::load_step_facts(static_cast<std::uint32_t>(std::atol(job)), 0).start_s > 0;
}

void report(const char* what, int (*work)(const char*), const char* argument, int samples) {
  std::vector<double> ms;
  int done = 0;
  for (int i = 0; i < samples; ++i) {
    bool ok = false;
    ms.push_back(ms_in_child(work, argument, ok));
    done += ok ? 1 : 0;
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%-44s median %7.3f ms  max %7.3f ms  (%d samples, %d with a result)\n", what,
              ms[ms.size() / 2], ms.back(), samples, done);
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: slurm_task_setup PREFIX MPI_PROGRAM OTHER_PROGRAM [SAMPLES]\n");
    return 2;
  }
  g_prefix = argv[1];
  const int samples = argc > 4 ? std::atoi(argv[4]) : 50;
  // Each sample in a fresh child of this process, which has loaded nothing of the decision's
  // (libelf), as slurmstepd has not.
  report("decision, MPI program (result: core set)", plan, argv[2], samples);
  report("decision, program without MPI", plan, argv[3], samples);
  if (const char* job = std::getenv("SLURM_JOB_ID")) {
    // slurmstepd has initialised libslurm; a program of its own must (and, by this call,
    // links it: load_step_facts finds slurm_load_job in the process, as in slurmstepd).
    slurm_init(nullptr);
    report("job's facts from slurmctld (once per step)", facts, job, samples);
  }
  return 0;
}
