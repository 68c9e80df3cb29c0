// The job's figures over all ranks, at MPI_Finalize (the record) and MPI_Pcontrol(4) (a
// subtotal): a few KB on rank 0 whatever the job's size. One collective (MPI_Allreduce) agrees
// on which routines any rank called (and on MPI_T's variables); then every rank's figures
// (packed, combined with profiler/packed_totals.hpp; MPI_T's with them) and host names and call
// sites (merged per source line) go up a tree of point-to-point messages
// (profiler/site_reduction.hpp), combined at every rank, so that rank 0 receives two messages of
// the job's size, not one per rank; then the MPI_Bcast of whether the record was written. With
// oversubscribed ranks each collective, and each round of the tree, needs ranks scheduled: their
// number is the cost.
#include "hang_watch.hpp"
#include "state.hpp"

#include "options.hpp"
#include "profiler/call_sites.hpp"
#include "profiler/clock.hpp"
#include "profiler/clock_check.hpp"
#include "profiler/packed_totals.hpp"
#include "profiler/record/record.hpp"
#include "profiler/site_reduction.hpp"
#include "profiler/spool.hpp"
#include "user_report.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <sched.h>
#include <unistd.h>

namespace strata::profiler {

namespace {

// The tree's messages go over the tools' world, which every module of the stack shares: a tag
// of each module's own ("SP" and "SO"; the tracer's are below 16), so that no other module's
// message, nor one of the profile's that came after its deadline, is taken for the overhead
// module's, or the other way round, when both are in the stack.
int summary_tag() {
  return is_overhead_module ? 0x534f : 0x5350;
}

// Waits, polling, until `done` says yes or the deadline (mono_ns) passes, yielding the core
// between polls as MPI does when ranks outnumber cores (a rank that sleeps instead delays the
// rendezvous of a long message by its sleep at every round); after a second, it sleeps 1 ms
// between polls, so that a rank that does not answer costs the others no core.
template <typename Done> bool wait_until(uint64_t deadline, Done done) {
  const uint64_t start = mono_ns();
  for (;;) {
    if (done())
      return true;
    const uint64_t now = mono_ns();
    if (now >= deadline)
      return false;
    if (now - start < 1'000'000'000) {
      sched_yield();
    } else {
      const timespec pause{0, 1'000'000};
      ::nanosleep(&pause, nullptr);
    }
  }
}

// STRATA_PROFILE_FAULT_STALL=RANK:MS, the tests' fault injection (docs/profile.md): that rank
// holds its subtree's figures MS ms before sending them to its parent, whose deadline then
// passes, as it would for a rank that stopped answering between the finalize's collectives.
// Read at every rank, so that rank 0, which has no parent to hold figures from, says once that a
// value is not RANK:MS. Returns how long this rank holds them, if it is the one named.
std::optional<unsigned long> stall_asked(const module_state& s) {
  const char* value = std::getenv("STRATA_PROFILE_FAULT_STALL");
  if (value == nullptr || *value == '\0')
    return std::nullopt;
  unsigned rank = 0;
  unsigned long ms = 0;
  char rest = 0;
  if (std::sscanf(value, "%u:%lu%c", &rank, &ms, &rest) != 2) {
    if (s.rank == 0)
      s.host->log(s.self, ("STRATA_PROFILE_FAULT_STALL: '" + std::string(value) +
                           "' is not RANK:MS; ignored")
                              .c_str());
    return std::nullopt;
  }
  if (rank != static_cast<unsigned>(s.rank))
    return std::nullopt;
  return ms;
}

void stall(const module_state& s, unsigned long ms) {
  s.host->log(s.self, ("holding this rank's figures " + std::to_string(ms) +
                       " ms before sending them (STRATA_PROFILE_FAULT_STALL)")
                          .c_str());
  const timespec pause{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1'000'000};
  ::nanosleep(&pause, nullptr);
}

// What the ranks of a subtree send up the tree (site_reduction.hpp), combined at every rank on
// the way: how many answered, their packed figures and their host names and call sites.
struct subtree {
  uint64_t ranks = 1;
  packed_totals figures;
  ranks_summary texts;
  pair_list pairs;
  communicator_list communicators;
};

// This rank's subtree combined (the whole job at rank 0) and sent to its parent. A rank waits
// for each child until a deadline that grows with the child's subtree, STRATA_WRITE_TIMEOUT_MS
// per round, and goes on without a child that has not sent by then: a rank that does not answer
// makes the record partial, never the job hang.
// `figures` holds the figures' words (packed_totals.hpp), then `figures.size() - figure_words` of
// MPI_T (mpi_t_packed), each combined its own way.
subtree combine_up_the_tree(module_state& s, packed_totals figures, size_t figure_words,
                            const std::string& own_text, pair_list own_pairs,
                            communicator_list own_communicators) {
  const site_tree_place place = site_tree_place_of(s.rank, s.world_size);
  const std::optional<unsigned long> stall_ms = stall_asked(s);
  const MPI_Comm comm = s.world;
  const auto round_ns = static_cast<uint64_t>(options::current().write_timeout_s * 1e9);
  const uint64_t start = mono_ns();
  subtree here;
  here.figures = std::move(figures);
  here.texts.add_text(own_text);
  here.pairs = std::move(own_pairs);
  here.communicators = std::move(own_communicators);
  for (const int child : place.children) {
    const site_tree_place below = site_tree_place_of(child, s.world_size);
    MPI_Status status{};
    int arrived = 0;
    const bool in_time =
        wait_until(start + (static_cast<uint64_t>(below.height) + 1) * round_ns, [&] {
          MPI_Iprobe(child, summary_tag(), comm, &arrived, &status);
          return arrived != 0;
        });
    tree_message message;
    pair_list child_pairs;
    communicator_list child_communicators;
    if (in_time) {
      int length = 0;
      MPI_Get_count(&status, MPI_BYTE, &length);
      std::string bytes(static_cast<size_t>(std::max(length, 0)), '\0');
      MPI_Recv(bytes.data(), length, MPI_BYTE, child, summary_tag(), comm, MPI_STATUS_IGNORE);
      if (read_tree_message(bytes, here.figures.size(), message) &&
          read_traffic(message.pairs, child_pairs, child_communicators) &&
          combine_packed(message.figures.data(), here.figures.data())) {
        combine_pairs(here.pairs, std::move(child_pairs));
        combine_communicators(here.communicators, std::move(child_communicators));
        if (here.figures.size() > figure_words)
          mpi_t::combine_packed(message.figures.data() + figure_words,
                                here.figures.data() + figure_words);
        here.ranks += message.ranks;
        here.texts.add_text(message.text);
        continue;
      }
    }
    s.host->log(s.self, ("the figures of ranks " + std::to_string(child) + "-" +
                         std::to_string(below.last_rank) +
                         (in_time ? " came malformed" : " did not arrive in time") +
                         "; the record goes on without them")
                            .c_str());
  }
  if (place.parent >= 0) {
    if (stall_ms)
      stall(s, *stall_ms);
    // Kept alive past a send that does not complete in time, which MPI may still read.
    auto* bytes =
        new std::string(write_tree_message(here.ranks, here.figures, summary_text(here.texts),
                                           write_traffic(here.pairs, here.communicators)));
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Isend(bytes->data(), static_cast<int>(bytes->size()), MPI_BYTE, place.parent, summary_tag(),
              comm, &request);
    const bool sent = wait_until(start + (static_cast<uint64_t>(place.height) + 2) * round_ns, [&] {
      int done = 0;
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      return done != 0;
    });
    if (sent) {
      delete bytes;
    } else {
      MPI_Request_free(&request);
      s.host->log(s.self, ("rank " + std::to_string(place.parent) +
                           " did not take this rank's figures in time")
                              .c_str());
    }
  }
  return here;
}

// The core's check of the event clock on this rank, now (module.h).
rank_clock check_event_clock(module_state& s, std::string& kernel_clocksource) {
  strata_clock_check c{};
  c.size = sizeof c;
  rank_clock clock;
  if (s.host->check_clock == nullptr || s.host->check_clock(&c) != 0)
    return clock;
  clock.tsc = c.tsc != 0;
  clock.tsc_hz = c.tsc_hz;
  clock.offset_ns = c.offset_ns;
  clock.drift_ppm = c.drift_ppm;
  clock.migrated = c.anchor_cpu >= 0 && c.check_cpu >= 0 && c.anchor_cpu != c.check_cpu;
  clock.trusted = c.trusted != 0;
  clock.correctable = c.correctable != 0;
  clock.correction = c.correction;
  kernel_clocksource = c.kernel_clocksource != nullptr ? c.kernel_clocksource : "";
  return clock;
}

// The job's figures on rank 0 (empty on the other ranks). Times go out corrected when the
// clock's check found a rate error (clock_check.hpp); the rank file keeps what was counted.
// The job's figures, and MPI_T's performance variables with them: its agreement words ride in
// the figures' MPI_Allreduce (MPI_MAX; replaced by their reduction over the ranks) and its values
// up the figures' tree, instead of two collectives of their own.
struct job_reduction {
  job_figures job;
  std::vector<uint64_t> mpi_t; // rank 0: every rank's MPI_T words combined (mpi_t_packed)
  std::optional<record::communication_section> communication; // rank 0, when counted
};
job_reduction reduce_over_ranks(module_state& s, mpi_t::agreement_layout& riders) {
  const size_t n = s.names.size();
  const rank_header& h = s.header();
  std::string kernel_clocksource;
  const rank_clock clock = check_event_clock(s, kernel_clocksource);
  const double factor = duration_factor(clock);
  std::vector<routine_slot> merged, corrected;
  const routine_slot* slots = s.counted_slots(merged);
  if (factor != 1.0) {
    corrected = scaled_slots(slots, n, factor);
    slots = corrected.data();
  }
  std::vector<callsite_total> sites;
  if (const callsite_slot* site_slots = s.counting.callsites.slots; site_slots != nullptr) {
    std::vector<callsite_slot> corrected_sites;
    if (factor != 1.0) {
      corrected_sites = scaled_callsites(site_slots, callsite_table::capacity, factor);
      site_slots = corrected_sites.data();
    }
    sites = resolve_callsites(site_slots, callsite_table::capacity, s.names);
  }
  const std::string text =
      summary_text({std::string(h.host, ::strnlen(h.host, sizeof(h.host)))}, sites);
  std::vector<uint32_t> layout = reduction_layout(slots, n);
  append_clock_layout(layout, clock);
  layout.insert(layout.end(), riders.begin(), riders.end());
  MPI_Allreduce(MPI_IN_PLACE, layout.data(), static_cast<int>(layout.size()), MPI_UINT32_T, MPI_MAX,
                s.world);
  std::copy(layout.end() - static_cast<std::ptrdiff_t>(riders.size()), layout.end(),
            riders.begin());
  layout.resize(layout.size() - riders.size());
  const reduction_plan plan = plan_reduction(layout, n);
  packed_totals figures = pack_rank(h, s.rank, s.names, slots, plan.functions);
  const size_t figure_words = figures.size();
  const std::vector<uint64_t> mpi_t_words = mpi_t_packed(s, riders);
  figures.insert(figures.end(), mpi_t_words.begin(), mpi_t_words.end());
  pair_list pairs;
  if (s.pairs.is_open()) {
    const strata_pair_sum* rows[pair_kind_count];
    for (int k = 0; k < pair_kind_count; ++k)
      rows[k] = s.pairs.row(k);
    pairs = rank_pairs(static_cast<uint32_t>(s.rank), rows, s.pairs.ranks());
    if (const uint64_t lost = s.persistent.not_kept(); lost != 0)
      s.host->log(s.self,
                  ("rank " + std::to_string(s.rank) + ": the starts of " + std::to_string(lost) +
                   " persistent requests are not in the communication figures (more than " +
                   std::to_string(persistent_requests::capacity - 1) + " alive at once)")
                      .c_str());
  }
  communicator_list communicators =
      rank_communicators(static_cast<uint32_t>(s.rank), static_cast<uint32_t>(s.world_size),
                         s.communicators.sums(), communicator_sums::capacity);
  subtree all = combine_up_the_tree(s, std::move(figures), figure_words, text, std::move(pairs),
                                    std::move(communicators));
  job_reduction out;
  if (s.rank == 0) {
    out.mpi_t.assign(all.figures.begin() + static_cast<std::ptrdiff_t>(figure_words),
                     all.figures.end());
    all.figures.resize(figure_words);
    complete_at_root(out.job, all.figures, s.names, plan.functions, all.texts, h, s.world_size,
                     static_cast<int>(all.ranks), s.model.loaded());
    out.job.clock =
        clock_from_layout(layout.data() + layout.size() - clock_layout_words, kernel_clocksource);
    if (s.pairs.is_open()) {
      out.communication = communication_of(all.pairs);
      if (s.communicators.is_open())
        out.communication->collectives = collectives_of(all.communicators);
    }
  }
  return out;
}

void print_rank_subtotal(module_state& s) {
  const double wall = static_cast<double>(mono_ns() - s.header().init_mono_ns) / 1e9;
  std::string text = "strata profile: rank " + std::to_string(s.rank) + " subtotal after " +
                     std::to_string(wall) + " s\n";
  std::vector<routine_slot> merged;
  const routine_slot* slots = s.counted_slots(merged);
  for (size_t f = 0; f < s.names.size(); ++f) {
    const routine_slot& slot = slots[f];
    if (slot.calls == 0)
      continue;
    char line[160];
    std::snprintf(line, sizeof(line), "  %-24s %10llu calls %12.6f s %14llu bytes\n",
                  s.names[f].c_str(), static_cast<unsigned long long>(slot.calls),
                  static_cast<double>(slot.time_ns) / 1e9,
                  static_cast<unsigned long long>(slot.bytes_sent) + slot.bytes_received);
    text += line;
  }
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
}

// The record as rank 0 spooled it, rewritten with the code its process exits with (on_exit runs
// at exit() and at the return from main) while the record is still in the spool: an ingest may
// have taken it meanwhile, and then the record keeps no exit code.
struct spooled_record {
  std::string path;
  record::job_record record;
  std::chrono::milliseconds timeout;
};
spooled_record* g_spooled = nullptr; // lives until the process ends

void add_exit_code(int code, void* /*unused*/) {
  spooled_record* r = g_spooled;
  if (r == nullptr || ::access(r->path.c_str(), F_OK) != 0)
    return;
  r->record.job.exit_code = code;
  (void)write_with_deadline(r->path, record::to_json(r->record), r->timeout);
}

// Rank 0: the record to the spool and where the user asked for it; then, to every rank, whether
// the per-rank files may go: only when the record is spooled and holds every rank (when the tree
// went on without some, their files let strata recover rebuild the record whole). Returns that.
bool write_outputs(module_state& s, const job_figures& job,
                   std::optional<record::mpi_t_section> mpi_t,
                   std::optional<record::communication_section> communication) {
  record::job_record job_record = to_record(job);
  job_record.mpi_t = std::move(mpi_t);
  job_record.communication = std::move(communication);
  const std::string json = record::to_json(job_record);
  const auto timeout = std::chrono::ceil<std::chrono::milliseconds>(
      std::chrono::duration<double>(options::current().write_timeout_s));
  // In this rank's spool, else in the first later one (spool.hpp) that takes it.
  bool spooled = false;
  std::string first_error;
  for (size_t i = s.spool_index; i < s.spools.size() && !spooled; ++i) {
    if (i > s.spool_index && !spool_unusable(s.spools[i]).empty())
      continue;
    const std::string path = s.spools[i] + "/" + s.key + ".json";
    std::string error = write_with_deadline(path, json, timeout);
    spooled = error.empty();
    if (spooled && g_spooled == nullptr) {
      g_spooled = new spooled_record{path, job_record, timeout};
      ::on_exit(add_exit_code, nullptr);
    }
    if (spooled && !first_error.empty())
      s.host->log(s.self,
                  ("cannot write the job record: " + first_error + "; it went to " + path).c_str());
    else if (!spooled && first_error.empty())
      first_error = std::move(error);
  }
  if (!spooled && !first_error.empty())
    s.host->log(s.self, ("cannot write the job record: " + first_error +
                         (s.mapping.ok() ? "; the per-rank files stay in the spool for strata "
                                           "recover"
                                         : "; no record is kept"))
                            .c_str());
  if (const std::string& copy = options::current().json; !copy.empty()) {
    if (const std::string error = write_with_deadline(copy, json, timeout); !error.empty())
      s.host->log(s.self, ("cannot write STRATA_PROFILE_JSON: " + error).c_str());
  }
  if (const std::string& out = options::current().out; !out.empty()) {
    const std::string report = render_user_report(job_record);
    if (out == "-") {
      [[maybe_unused]] ssize_t n = ::write(STDOUT_FILENO, report.data(), report.size());
    } else if (const std::string error = write_with_deadline(out, report, timeout);
               !error.empty()) {
      s.host->log(s.self, ("cannot write STRATA_PROFILE_OUT: " + error).c_str());
    }
  }
  const bool whole = job.ranks_reported >= job.ranks;
  if (spooled && !whole)
    s.host->log(s.self, ("the record holds " + std::to_string(job.ranks_reported) + " of " +
                         std::to_string(job.ranks) +
                         " ranks; every rank's file stays in the spool: strata recover rebuilds "
                         "the record from all of them")
                            .c_str());
  int done = spooled && whole ? 1 : 0;
  MPI_Bcast(&done, 1, MPI_INT, 0, s.world);
  return done != 0;
}

} // namespace

void charge_untimed_polls(module_state& s) {
  const bool paused = s.paused.load(std::memory_order_relaxed);
  if (paused)
    s.lent_counters.put_back_values();
  profiler::charge_untimed_polls(s.counting.slots, s.uncharged, s.polls.data(), s.traits);
  if (paused)
    s.lent_counters.remember_values();
}

void pcontrol_level(module_state& s, int level) {
  switch (level) {
  case 0:
    if (!s.paused) {
      charge_untimed_polls(s);
      s.lent_counters.remember_values();
      s.paused = true;
    }
    break;
  case 1:
    if (s.paused)
      s.lent_counters.put_back_values();
    s.paused = false;
    break;
  case 2:
    for (size_t f = 0; f < s.names.size(); ++f) {
      s.counting.slots[f] = empty_routine_slot;
      s.uncharged[f] = 0;
      s.polls[f] = poll_figures{};
    }
    clear_thread_slots(s.counting.thread_arrays);
    s.pairs.clear();
    s.communicators.clear();
    mpi_t_reset(s);
    if (s.paused)
      s.lent_counters.remember_values();
    break;
  case 3:
    charge_untimed_polls(s);
    print_rank_subtotal(s);
    break;
  case 4: {
    // Collective: every rank calls MPI_Pcontrol(4); rank 0 prints the job's subtotal.
    charge_untimed_polls(s);
    s.header().final_mono_ns = mono_ns();
    store_counter_totals(s);
    mpi_t::agreement_layout agreement = mpi_t_agreement(s, false);
    const job_reduction reduced = reduce_over_ranks(s, agreement);
    auto mpi_t = mpi_t_section(s, agreement, reduced.mpi_t, false);
    s.header().final_mono_ns = 0;
    if (s.rank == 0) {
      record::job_record subtotal = to_record(reduced.job);
      subtotal.mpi_t = std::move(mpi_t);
      subtotal.communication = reduced.communication;
      const std::string report = render_user_report(subtotal);
      [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, report.data(), report.size());
    }
    break;
  }
  default:
    break;
  }
}

void finalize_job(module_state& s) {
  const uint64_t start = mono_ns();
  rank_header& h = s.header();
  h.final_mono_ns = start;
  h.end_unix_ns = unix_ns();
  charge_untimed_polls(s);
  std::vector<routine_slot> merged;
  h.overhead_ns = calls_cost_ns(s.counted_slots(merged), s.polls.data(), s.traits, s.per_call);
  h.status = static_cast<int32_t>(job_status::finalized);
  store_counter_totals(s);
  mpi_t::agreement_layout agreement = mpi_t_agreement(s, true);
  job_reduction reduced = reduce_over_ranks(s, agreement);
  job_figures& job = reduced.job;
  auto mpi_t = mpi_t_section(s, agreement, reduced.mpi_t, true);
  if (s.rank == 0) {
    // Measured before the record is rendered, so the record can hold it; rendering, writing and
    // the broadcast of the outcome come after (they end in overhead_ns below, not in the record).
    job.finalize_s = static_cast<double>(mono_ns() - start) / 1e9;
    job.poll_bytes_estimated = any_lean_poll(s.traits) ? 1 : 0;
    if (!write_outputs(s, job, std::move(mpi_t), std::move(reduced.communication)))
      return; // keep this rank's file for strata recover
  } else {
    int ok = 0;
    MPI_Bcast(&ok, 1, MPI_INT, 0, s.world);
    if (ok == 0)
      return; // keep this rank's file for strata recover
  }
  // The record is in the spool: the per-rank files are no longer needed.
  remove_hang_state();
  if (!s.pairs.path().empty())
    ::unlink(s.pairs.path().c_str());
  if (s.mapping.ok()) {
    ::unlink(s.mapping.path.c_str());
    s.header().overhead_ns += mono_ns() - start;
  }
}

} // namespace strata::profiler
