// The `profile` module: always-on per-routine counters for every job (after Rabenseifner,
// "Automatic MPI Counter Profiling"), one job record per job, written at MPI_Finalize with MPI
// collectives. Each rank counts straight into a file mapping (profiler/rank_file.hpp), so a rank
// that aborts, dies of a signal or is killed still leaves what it counted for `strata recover`.
// Built twice: as `profile`, and as `overhead` (STRATA_OVERHEAD_MODULE), which adds per call
// site the time over the machine model (profiler/time_over_model.hpp).
//
// This file is the module's face to the core: its descriptor, its callbacks and the optional
// symbols of include/strata/module.h; the work is in the files state.hpp lists.
#include "state.hpp"

#include "hang_watch.hpp"
#include "options.hpp"
#include "profiler/clock.hpp"
#include "profiler/routine_classes.hpp"

#include <strata/zmpi.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

// The core refuses a module built for another MPI than its own (state.hpp includes mpi.h first).
static_assert(std::string_view(STRATA_MPI_FLAVOR) != "none", "mpi.h must come before module.h");

namespace strata::profiler {

// Which of the two modules this is (state.hpp): this file and options.cpp are compiled for each.
#ifdef STRATA_OVERHEAD_MODULE
constexpr const char* this_module_name = "overhead";
constexpr const char* module_description =
    "the profile, and per call site the time over the machine model (STRATA_MODEL)";
constexpr bool this_is_overhead_module = true;
#else
constexpr const char* this_module_name = "profile";
constexpr const char* module_description = "always-on per-routine counters; one job record per job";
constexpr bool this_is_overhead_module = false;
#endif
const bool is_overhead_module = this_is_overhead_module;
const char* const module_name = this_module_name;

// Chooses the callbacks: with or without hardware or software counters.
void use_counting_callbacks(bool counting);

// Every call that reaches the profile as an event, once it has both times.
void on_exit(strata_event* ev, void* raw) {
  auto* s = static_cast<module_state*>(raw);
  if (__builtin_expect(!s->paused.load(std::memory_order_relaxed), 1))
    count_call(s->counting, *ev);
  count_pair(*s, *ev);
}

namespace {

// The starts of persistent and partitioned requests that reach the profile as events (not
// summed by the core): each adds to the sums noted when its request was made (a message to its
// destination, a call of its collective), as the core's sums of the others do.
void count_starts(module_state& s, const strata_event& ev, bool many) {
  const auto count_start = [&s](uint64_t handle) {
    if (const persistent_requests::made* started = s.persistent.find(handle))
      if (started->sums != nullptr)
        add_to_sums(s, started->sums[0], started->sums[1], started->bytes);
  };
  if (!many) {
    count_start(ev.request);
    return;
  }
  const auto* handles = static_cast<const MPI_Request*>(ev.requests);
  for (int i = 0; handles != nullptr && i < ev.request_count; ++i) {
    uint64_t bits = 0;
    std::memcpy(&bits, &handles[i], sizeof(MPI_Request)); // NOLINT(bugprone-sizeof-expression)
    count_start(bits);
  }
}

void note_or_start(module_state& s, const strata_event& ev, request_role role) {
  switch (role) {
  case request_role::makes_send:
  case request_role::makes_partitioned_send:
    // A send to MPI_PROC_NULL (or any rank outside the world) is made but sends nothing.
    if (static_cast<uint32_t>(ev.peer) < s.pairs.ranks()) {
      const int kind =
          role == request_role::makes_send ? pair_kind_persistent : pair_kind_partitioned;
      strata_pair_sum& sum = s.pairs.row(kind)[static_cast<uint32_t>(ev.peer)];
      s.persistent.note(ev.request, &sum.messages, non_negative(ev.bytes_sent));
    } else {
      s.persistent.forget(ev.request);
    }
    return;
  case request_role::makes_collective:
    // The group is written beside the communicator's sums now, its starts add only the calls.
    if (strata_comm_sum* sum =
            communicator_sum(s, ev.comm_id, ev.comm_world_ranks, ev.comm_size, ev.flags))
      s.persistent.note(ev.request, &sum->calls, non_negative(ev.bytes_sent));
    else
      s.persistent.forget(ev.request);
    return;
  case request_role::makes_receive:
    s.persistent.forget(ev.request);
    return;
  case request_role::starts_one:
  case request_role::starts_many:
    count_starts(s, ev, role == request_role::starts_many);
    return;
  case request_role::none:
    return;
  }
}

} // namespace

void count_persistent(module_state& s, const strata_event& ev, request_role role) {
  if (ev.result != MPI_SUCCESS || (!s.pairs.is_open() && !s.communicators.is_open()))
    return;
  if (!s.counting.threaded) {
    note_or_start(s, ev, role);
    return;
  }
  const std::lock_guard<std::mutex> lock(s.persistent_lock);
  note_or_start(s, ev, role);
}

namespace {

// Nothing the profiler does may take the application down: an exception stops at the module.
template <typename Fn> void guarded(module_state* s, const char* what, Fn fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    s->host->log(s->self, (std::string(what) + ": " + e.what()).c_str());
  } catch (...) {
    s->host->log(s->self, (std::string(what) + ": unknown error").c_str());
  }
}

int on_load(const strata_host* host, int self, const strata_module_arg* args, int nargs,
            void** state, char* error, size_t error_size) {
  if (const std::string problem = options::take(args, nargs); !problem.empty()) {
    std::snprintf(error, error_size, "%s", problem.c_str());
    return 1;
  }
  use_counting_callbacks(!options::current().counters.empty());
  auto* s = new module_state();
  s->host = host;
  s->self = self;
  const int n = host->function_count();
  // The overhead module's record has no communication section; the profile's only unless
  // turned off.
  s->communication = !is_overhead_module && options::current().communication;
  for (int f = 0; f < n; ++f) {
    s->names.emplace_back(host->function_name(f));
    const routine_class kind = classify_routine(s->names.back());
    s->traits.push_back((kind.collective ? routine_trait::collective : 0) |
                        (kind.with_peer ? routine_trait::with_peer : 0));
    s->cheap.push_back(kind.counted_without_time);
    s->pair_kinds.push_back(
        static_cast<int8_t>(s->communication ? pair_kind_of(s->names.back()) : -1));
    s->request_roles.push_back(s->communication ? request_role_of(s->names.back())
                                                : request_role::none);
    // A persistent collective's `_init` is noted as a request; its starts are its calls.
    s->beside_pairs.push_back(!s->communication                               ? 0
                              : s->request_roles.back() != request_role::none ? s->counts_requests
                              : kind.collective                               ? s->counts_collective
                                                                              : 0);
  }
  s->pair_rows.assign(static_cast<size_t>(n), nullptr);
  s->polls.assign(static_cast<size_t>(n), poll_figures{});
  s->early_slots.assign(static_cast<size_t>(n), empty_routine_slot);
  s->uncharged_in_memory.assign(static_cast<size_t>(n), 0);
  s->uncharged = s->uncharged_in_memory.data();
  s->counting.slots = s->early_slots.data();
  s->counting.header = &s->early_header;
  s->counting.traits = s->traits.data();
  s->counting.polls = s->polls.data();
  s->header().start_unix_ns = unix_ns();
  s->want_callsites = options::current().callsites;
  s->counting_allowed = !s->want_callsites && options::current().counters.empty();
  s->lean_polls = options::current().lean_polls;
  if (is_overhead_module) {
    s->want_callsites = true;
    s->counting_allowed = false;
    const std::string& path = options::current().model;
    const std::string problem =
        path.empty()
            ? "needs a machine model: overhead:model=model.json or STRATA_MODEL=model.json "
              "(made by strata bench)"
            : s->model.load(path, s->names);
    if (!problem.empty()) {
      std::snprintf(error, error_size, "%s",
                    (path.empty() ? problem : "option model: " + problem).c_str());
      delete s;
      return 1;
    }
    s->counting.model = &s->model;
  }
  if (!is_overhead_module)
    publish_spools(host, self);
  host->subscribe(self, "*");
  guarded(s, "the MPI library's own variables are not recorded", [&] { mpi_t_load(*s); });
  *state = s;
  keep_for_abnormal_ends(s);
  return 0;
}

void on_mpi_ready(void* raw) {
  auto* s = static_cast<module_state*>(raw);
  guarded(s, "profiling this rank without a file", [&] { start_rank(*s); });
  guarded(s, "no hang state is kept", [&] { start_hang_watch(*s); });
  guarded(s, "the MPI library's own variables are not recorded", [&] { mpi_t_start(*s); });
}

void on_pcontrol(int level, void* raw) {
  auto* s = static_cast<module_state*>(raw);
  guarded(s, "MPI_Pcontrol", [&] { pcontrol_level(*s, level); });
}

void on_finalize(void* raw) {
  auto* s = static_cast<module_state*>(raw);
  guarded(s, "no hang state is kept", [] { stop_hang_watch(true); });
  guarded(s, "job record not written", [&] { finalize_job(*s); });
  // Whatever became of the record: a rank past the job's end has no hang to tell.
  guarded(s, "no hang state is kept", [] { remove_hang_state(); });
}

// Most untimed polls complete nothing: the core only adds 1 to the routine's uncharged polls for
// those (strata_module_counter_v1). The others reach this callback, decoded, for their bytes.
void count_untimed_poll(strata_event* ev, void* raw) {
  auto* s = static_cast<module_state*>(raw);
  if (!s->paused.load(std::memory_order_relaxed))
    count_completed_untimed_poll(s->counting, s->uncharged, *ev);
}

// Not const: counting hardware or software events needs an enter callback too, which load sets
// once it knows the options (the core reads the callbacks when it builds the chains, after every
// load). Without counters there is no enter callback, so no call at MPI entry.
strata_module profile_module = {STRATA_MODULE_ABI_VERSION,
                                this_module_name,
                                STRATA_MPI_FLAVOR,
                                module_description,
                                on_load,
                                on_mpi_ready,
                                nullptr,
                                on_exit,
                                on_pcontrol,
                                on_finalize,
                                nullptr};

} // namespace

bool lends_slots_to_core(const module_state& s) {
  return s.counting_allowed && options::current().core_sums && s.counting.model == nullptr &&
         !s.counting.threaded;
}

void use_counting_callbacks(bool counting) {
  profile_module.enter = counting ? on_enter_counting : nullptr;
  profile_module.exit = counting ? on_exit_counting : on_exit;
}
} // namespace strata::profiler

// MPI_Abort is wrapped (not only observed) so the end is recorded before MPI kills the job.
extern "C" STRATA_MODULE_EXPORT int MPI_Abort(MPI_Comm comm, int errorcode) {
  strata::profiler::mark_end(strata::profiler::job_status::aborted, errorcode);
  return ZMPI_Abort(comm, errorcode);
}

// Sampled polls: the core times one poll in about STRATA_PROFILE_POLL_SAMPLE (default 64); 1
// times every poll. Off with call sites (and so in the overhead module) and with counters,
// which charge each call its own time and its own counter readings.
extern "C" STRATA_MODULE_EXPORT uint32_t strata_module_polls_v1(void* state,
                                                                strata_event_fn* untimed) {
  auto* s = static_cast<strata::profiler::module_state*>(state);
  if (s == nullptr || !s->counting_allowed)
    return 1;
  const uint32_t interval = strata::profiler::options::current().poll_sample;
  *untimed = strata::profiler::count_untimed_poll;
  return interval;
}

// Counting without events (module.h): every call of a routine that cannot wait, and the untimed
// polls. Counted straight into the rank file: a killed rank keeps them.
extern "C" STRATA_MODULE_EXPORT uint64_t* strata_module_counter_v1(void* state, int function,
                                                                   int what) {
  using namespace strata::profiler;
  auto* s = static_cast<module_state*>(state);
  if (s == nullptr || !s->counting_allowed || function < 0 ||
      function >= static_cast<int>(s->names.size()))
    return nullptr;
  const auto f = static_cast<size_t>(function);
  uint64_t* counter = nullptr;
  if (what == STRATA_COUNT_CALLS && s->cheap[f]) {
    counter = &s->counting.slots[f].calls;
    s->traits[f] |= routine_trait::counted_only;
  } else if (what == STRATA_COUNT_UNTIMED_POLLS && s->lean_polls) {
    counter = &s->uncharged[f];
    s->traits[f] |= routine_trait::sampled_poll | routine_trait::lean_poll;
  } else if (what == STRATA_COUNT_EMPTY_POLLS) {
    counter = &s->uncharged[f];
    s->traits[f] |= routine_trait::sampled_poll;
  }
  if (counter != nullptr)
    s->lent_counters.lend(counter);
  return counter;
}

// Timed calls summed by the core (module.h): what count_call would add for a routine that is
// neither sampled nor only counted, when no call site, counter or model is kept per call and
// one thread at a time calls MPI. The slot is the rank file's, as with events; the routine is
// marked, for the profiler's estimate of its own cost (the core's sum, not the callback).
extern "C" STRATA_MODULE_EXPORT int strata_module_timed_counts_v1(void* state, int function,
                                                                  strata_timed_counts* out) {
  using namespace strata::profiler;
  auto* s = static_cast<module_state*>(state);
  if (s == nullptr || !lends_slots_to_core(*s) || function < 0 ||
      function >= static_cast<int>(s->names.size()))
    return 0;
  const auto f = static_cast<size_t>(function);
  if ((s->traits[f] & (routine_trait::sampled_poll | routine_trait::counted_only)) != 0)
    return 0;
  // The messages of persistent sends and the calls of persistent collectives: the calls that
  // make requests stay events (their handles noted by count_persistent; they are few), the
  // starts are summed and looked up in the table of requests by the core.
  switch (s->request_roles[f]) {
  case request_role::none:
    break;
  case request_role::starts_one:
  case request_role::starts_many:
    if (s->pairs.is_open() || s->communicators.is_open()) {
      out->started = s->persistent.open();
      // No table, no sums of starts: then they stay events, which count none either.
      if (out->started == nullptr)
        return 0;
    }
    break;
  default:
    return 0;
  }
  out->slot = &s->counting.slots[f];
  out->latest_exit_ns = &s->header().last_mono_ns;
  out->histograms = slot_histograms(s->traits[f]);
  out->pairs = s->pair_rows[f];
  out->pair_count = out->pairs != nullptr ? s->pairs.ranks() : 0;
  if (s->beside_pairs[f] == module_state::counts_collective && s->communicators.is_open()) {
    out->comms = s->communicators.sums();
    out->comm_count = communicator_sums::capacity;
  }
  s->lent_counters.lend(out->slot);
  s->traits[f] |= routine_trait::core_summed;
  return 1;
}

// What count_call and the counter callbacks read of an event besides its function, times and
// call site (module.h): the communicator's size, the bytes and the bytes received; not the peer
// (whether a routine has one is its trait), the tag, the requests nor the status's source,
// which the core then leaves undecoded.
extern "C" STRATA_MODULE_EXPORT uint32_t strata_module_fields_v1(void*) {
  return STRATA_FIELD_COMM | STRATA_FIELD_BYTES | STRATA_FIELD_RECEIVED;
}

// The communicator's size only where it is read: a collective's histogram, the machine model's
// time (the overhead module). Most of a point-to-point call's decoding is its communicator
// (a look-up, four fields and the peer's world rank): about 40 instructions fewer on a timed
// MPI_Sendrecv or MPI_Iprobe.
extern "C" STRATA_MODULE_EXPORT uint32_t strata_module_function_fields_v1(void* state,
                                                                          int function) {
  const auto* s = static_cast<const strata::profiler::module_state*>(state);
  const uint32_t fields = strata::summed_call_fields(false);
  if (s == nullptr || function < 0 || static_cast<size_t>(function) >= s->traits.size() ||
      s->counting.model != nullptr ||
      (s->traits[static_cast<size_t>(function)] & strata::profiler::routine_trait::collective) != 0)
    // A persistent collective's request, for its starts.
    return strata::summed_call_fields(true) |
           (s->request_roles[static_cast<size_t>(function)] ==
                    strata::profiler::request_role::makes_collective
                ? STRATA_FIELD_REQUESTS
                : 0);
  // A send's destination as a world rank, for the matrix of who sends to whom.
  if (s->pair_kinds[static_cast<size_t>(function)] >= 0)
    return fields | STRATA_FIELD_PEER;
  // A persistent send's destination and its request, a start's requests.
  switch (s->request_roles[static_cast<size_t>(function)]) {
  case strata::profiler::request_role::makes_send:
  case strata::profiler::request_role::makes_partitioned_send:
    return fields | STRATA_FIELD_PEER | STRATA_FIELD_REQUESTS;
  case strata::profiler::request_role::none:
    return fields;
  default:
    return fields | STRATA_FIELD_REQUESTS;
  }
}

extern "C" STRATA_MODULE_EXPORT const strata_module* strata_module_v1(void) {
  return &strata::profiler::profile_module;
}

extern "C" STRATA_MODULE_EXPORT const strata_module_options* strata_module_options_v1(void) {
  return strata::profiler::options::declared();
}
