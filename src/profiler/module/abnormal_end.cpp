// Abnormal ends: a rank that dies of a signal or exits without MPI_Finalize marks its end in its
// rank file first (MPI_Abort's wrapper in profile_module.cpp too), so that `strata recover`
// reports how the job ended. The first end seen is the one that counts.
#include "state.hpp"

#include "profiler/clock.hpp"

#include <csignal>
#include <cstdlib>

namespace strata::profiler {

namespace {

module_state* g_state = nullptr; // for the signal handlers, MPI_Abort and atexit

constexpr int watched_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTERM, SIGINT, SIGABRT};
struct sigaction previous_actions[sizeof(watched_signals) / sizeof(int)];

void on_signal(int signo, siginfo_t* info, void* context) {
  mark_end(job_status::signal, signo);
  for (size_t i = 0; i < sizeof(watched_signals) / sizeof(int); ++i) {
    if (watched_signals[i] != signo)
      continue;
    const struct sigaction& old = previous_actions[i];
    if ((old.sa_flags & SA_SIGINFO) != 0 && old.sa_sigaction != nullptr) {
      old.sa_sigaction(signo, info, context);
      return;
    }
    if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN && old.sa_handler != nullptr) {
      old.sa_handler(signo);
      return;
    }
    ::sigaction(signo, &old, nullptr);
    ::raise(signo);
    return;
  }
}

void at_exit() {
  mark_end(job_status::exited, 0);
}

} // namespace

void keep_for_abnormal_ends(module_state* s) {
  g_state = s;
}

void watch_abnormal_ends() {
  for (size_t i = 0; i < sizeof(watched_signals) / sizeof(int); ++i) {
    struct sigaction action {};
    action.sa_sigaction = on_signal;
    action.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    ::sigaction(watched_signals[i], &action, &previous_actions[i]);
  }
  std::atexit(at_exit);
}

void mark_end(job_status status, int detail) {
  module_state* s = g_state;
  if (s == nullptr || s->counting.header == nullptr)
    return;
  rank_header& h = s->header();
  if (h.status != static_cast<int32_t>(job_status::running))
    return; // the first end seen is the one that counts
  h.status = static_cast<int32_t>(status);
  h.status_detail = detail;
  h.end_unix_ns = unix_ns(); // clock_gettime is async-signal-safe
  if (h.last_mono_ns == 0)
    h.last_mono_ns = mono_ns();
}

} // namespace strata::profiler
