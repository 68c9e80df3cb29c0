// Backtraces through the entry points: the program samples its own stack from a CPU-time timer
// while it calls MPI in a loop, and counts the samples whose unwound stack reaches run_calls, the
// function that makes the calls. A sampling profiler, a debugger or a crash handler unwinds the
// same way, through the call frame information of whatever code the signal interrupted: an
// entry point's assembly, the summed call, a module, MPI.
//
//   backtrace_c [SAMPLES]   calls until SAMPLES samples are taken (default 200; at most 30 s),
//                           prints "samples=N reached=M in_strata=K" (K: samples that
//                           interrupted libstrata itself), and for each sample that did not
//                           reach run_calls, the names of its frames.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum { max_samples = 2048, max_frames = 64 };
static void* frames[max_samples][max_frames];
static int depth[max_samples];
static volatile sig_atomic_t taken;
static long main_thread;

static void take_sample(int sig) {
  (void)sig;
  // Threads that MPI or a tool start have the signal blocked; this test keeps to the caller's.
  if (syscall(SYS_gettid) != main_thread || taken >= max_samples)
    return;
  const int n = taken;
  depth[n] = backtrace(frames[n], max_frames);
  taken = n + 1;
}

// Exported (the program links with -rdynamic) so that dladdr names it.
__attribute__((noinline)) long run_calls(long calls) {
  char sent = 0, received = 0;
  long found = 0;
  for (long i = 0; i < calls; ++i) {
    int flag = 0;
    MPI_Barrier(MPI_COMM_SELF);
    MPI_Sendrecv(&sent, 0, MPI_CHAR, 0, 1, &received, 0, MPI_CHAR, 0, 1, MPI_COMM_SELF,
                 MPI_STATUS_IGNORE);
    MPI_Iprobe(MPI_ANY_SOURCE, 2, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
    found += flag;
  }
  return found;
}

static const char* name_of(void* address, const char** object) {
  Dl_info info;
  // A return address points after its call: the byte before it is in the calling function.
  if (dladdr((char*)address - 1, &info) == 0) {
    *object = "?";
    return "?";
  }
  *object = info.dli_fname != NULL ? info.dli_fname : "?";
  return info.dli_sname != NULL ? info.dli_sname : "?";
}

int main(int argc, char** argv) {
  const int wanted = argc > 1 ? atoi(argv[1]) : 200;
  main_thread = syscall(SYS_gettid);
  // backtrace loads the unwinder on its first use: not in the signal handler.
  void* warm[4];
  backtrace(warm, 4);
  // Blocked before MPI_Init, so that the threads MPI and the tools start inherit the mask.
  sigset_t profiling;
  sigemptyset(&profiling);
  sigaddset(&profiling, SIGPROF);
  pthread_sigmask(SIG_BLOCK, &profiling, NULL);
  MPI_Init(&argc, &argv);
  pthread_sigmask(SIG_UNBLOCK, &profiling, NULL);

  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = take_sample;
  action.sa_flags = SA_RESTART;
  sigaction(SIGPROF, &action, NULL);
  // As often as the kernel's tick allows.
  const struct itimerval every = {{0, 100}, {0, 100}};
  setitimer(ITIMER_PROF, &every, NULL);
  const time_t give_up = time(NULL) + 30;
  long found = 0;
  while (taken < wanted && taken < max_samples && time(NULL) < give_up)
    found += run_calls(20000);
  const struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_PROF, &off, NULL);

  int reached = 0, in_strata = 0;
  for (int n = 0; n < taken; ++n) {
    int reaches = 0;
    const char* object = "?";
    // Frame 0 is the handler and frame 1 the signal's return; frame 2 is where it landed.
    if (depth[n] > 2) {
      name_of((char*)frames[n][2] + 1, &object);
      in_strata += strstr(object, "libstrata.so") != NULL;
    }
    for (int f = 1; f < depth[n]; ++f) {
      const char* unused = NULL;
      reaches |= strcmp(name_of(frames[n][f], &unused), "run_calls") == 0;
    }
    reached += reaches;
    if (!reaches) {
      printf("lost:");
      for (int f = 1; f < depth[n]; ++f) {
        const char* in = "?";
        const char* name = name_of(frames[n][f], &in);
        const char* slash = strrchr(in, '/');
        printf(" %s(%s)", name, slash != NULL ? slash + 1 : in);
      }
      printf("\n");
    }
  }
  printf("samples=%d reached=%d in_strata=%d found=%ld\n", (int)taken, reached, in_strata, found);
  MPI_Finalize();
  return 0;
}
