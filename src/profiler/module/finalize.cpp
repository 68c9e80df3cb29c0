// The job's figures over all ranks, at MPI_Finalize (the record) and MPI_Pcontrol(4) (a
// subtotal): a few KB on rank 0 whatever the job's size. Two collectives: which routines any
// rank called (MPI_Allreduce) and every figure in one MPI_Reduce with a user-defined operation
// (profiler/packed_totals.hpp); then the host names and call sites, merged on the way up a tree
// of point-to-point messages (profiler/site_reduction.hpp), so that rank 0 receives the job's
// distinct call sites rather than every rank's; then the MPI_Bcast of whether the record was
// written. With oversubscribed ranks each collective needs every rank scheduled: their number
// is the cost.
#include "state.hpp"

#include "options.hpp"
#include "profiler/call_sites.hpp"
#include "profiler/clock.hpp"
#include "profiler/packed_totals.hpp"
#include "profiler/record/record.hpp"
#include "profiler/site_reduction.hpp"
#include "profiler/spool.hpp"
#include "user_report.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <sched.h>
#include <unistd.h>

namespace strata::profiler {

namespace {

// The reduction's MPI_Op: each element is a whole packed buffer.
void combine_packed_op(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const auto* a = static_cast<const uint64_t*>(in);
  auto* b = static_cast<uint64_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    const size_t words = packed_words(a[0]); // a[0]: the routine count, as in every buffer
    combine_packed(a, b);
    a += words;
    b += words;
  }
}

constexpr int summary_tag = 1;

// Waits, polling, until `done` says yes or the deadline (mono_ns) passes: yielding at first, then
// sleeping a little longer each time, so that oversubscribed ranks get the cores they wait for.
template <typename Done> bool wait_until(uint64_t deadline, Done done) {
  const uint64_t start = mono_ns();
  for (;;) {
    if (done())
      return true;
    const uint64_t now = mono_ns();
    if (now >= deadline)
      return false;
    const uint64_t waited = now - start;
    if (waited < 1'000'000) {
      sched_yield();
    } else {
      const timespec pause{0, static_cast<long>(std::min<uint64_t>(waited / 8, 1'000'000))};
      ::nanosleep(&pause, nullptr);
    }
  }
}

// The host names and call sites of this rank's subtree (all ranks' at rank 0), merged along the
// tree of site_reduction.hpp. A rank waits for each child until a deadline that grows with the
// child's subtree, STRATA_WRITE_TIMEOUT_MS per round, and goes on without a child that has not
// sent by then: a rank that does not answer costs the record its ranks' host names and call
// sites, never the job its end.
ranks_summary reduce_texts(module_state& s, const std::string& own) {
  const site_tree_place place = site_tree_place_of(s.rank, s.world_size);
  const uint64_t round_ns = static_cast<uint64_t>(options::write_timeout().count()) * 1'000'000;
  const MPI_Comm comm = s.finalize_comm != MPI_COMM_NULL ? s.finalize_comm : s.world;
  const uint64_t start = mono_ns();
  ranks_summary here;
  here.add_text(own);
  for (const int child : place.children) {
    const site_tree_place below = site_tree_place_of(child, s.world_size);
    MPI_Status status{};
    int arrived = 0;
    const bool in_time =
        wait_until(start + (static_cast<uint64_t>(below.height) + 1) * round_ns, [&] {
          MPI_Iprobe(child, summary_tag, comm, &arrived, &status);
          return arrived != 0;
        });
    if (!in_time) {
      s.host->log(s.self, ("the host names and call sites of ranks " + std::to_string(child) + "-" +
                           std::to_string(below.last_rank) +
                           " did not arrive in time; the job's figures go on without them")
                              .c_str());
      continue;
    }
    int length = 0;
    MPI_Get_count(&status, MPI_CHAR, &length);
    std::string text(static_cast<size_t>(std::max(length, 0)), '\0');
    MPI_Recv(text.data(), length, MPI_CHAR, child, summary_tag, comm, MPI_STATUS_IGNORE);
    here.add_text(text);
  }
  if (place.parent >= 0) {
    // Kept alive past a send that does not complete in time, which MPI may still read.
    auto* text = new std::string(summary_text(here));
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Isend(text->data(), static_cast<int>(text->size()), MPI_CHAR, place.parent, summary_tag,
              comm, &request);
    const bool sent = wait_until(start + (static_cast<uint64_t>(place.height) + 2) * round_ns, [&] {
      int done = 0;
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      return done != 0;
    });
    if (sent) {
      delete text;
    } else {
      MPI_Request_free(&request);
      s.host->log(s.self, ("rank " + std::to_string(place.parent) +
                           " did not take this rank's host names and call sites in time")
                              .c_str());
    }
  }
  return here;
}

// The job's figures on rank 0 (empty on the other ranks).
job_figures reduce_over_ranks(module_state& s) {
  const size_t n = s.names.size();
  const rank_header& h = s.header();
  std::vector<callsite_total> sites;
  if (s.counting.callsites.slots != nullptr)
    sites = resolve_callsites(s.counting.callsites.slots, callsite_table::capacity, s.names);
  const std::string text =
      summary_text({std::string(h.host, ::strnlen(h.host, sizeof(h.host)))}, sites);
  std::vector<uint32_t> layout = reduction_layout(s.counting.slots, n);
  MPI_Allreduce(MPI_IN_PLACE, layout.data(), static_cast<int>(layout.size()), MPI_UINT32_T, MPI_MAX,
                s.world);
  const reduction_plan plan = plan_reduction(layout, n);

  const packed_totals mine = pack_rank(h, s.rank, s.names, s.counting.slots, plan.functions);
  packed_totals all(s.rank == 0 ? mine.size() : 1);
  MPI_Datatype packed_type = MPI_DATATYPE_NULL;
  MPI_Type_contiguous(static_cast<int>(mine.size()), MPI_UINT64_T, &packed_type);
  MPI_Type_commit(&packed_type);
  MPI_Op combine = MPI_OP_NULL;
  MPI_Op_create(combine_packed_op, 1, &combine);
  MPI_Reduce(mine.data(), all.data(), 1, packed_type, combine, 0, s.world);
  MPI_Op_free(&combine);
  MPI_Type_free(&packed_type);

  const ranks_summary texts = reduce_texts(s, text);
  job_figures job;
  if (s.rank == 0)
    complete_at_root(job, all, s.names, plan.functions, texts, h, s.world_size, s.model.loaded());
  return job;
}

void print_rank_subtotal(module_state& s) {
  const double wall = static_cast<double>(mono_ns() - s.header().init_mono_ns) / 1e9;
  std::string text = "strata profile: rank " + std::to_string(s.rank) + " subtotal after " +
                     std::to_string(wall) + " s\n";
  for (size_t f = 0; f < s.names.size(); ++f) {
    const routine_slot& slot = s.counting.slots[f];
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

// Rank 0: the record to the spool and where the user asked for it; then whether it was spooled,
// to every rank.
void write_outputs(module_state& s, const job_figures& job) {
  const record::job_record job_record = to_record(job);
  const std::string json = record::to_json(job_record);
  const auto timeout = options::write_timeout();
  bool spooled = false;
  if (!s.spool.empty()) {
    const std::string path = s.spool + "/" + s.key + ".json";
    const std::string error = write_with_deadline(path, json, timeout);
    spooled = error.empty();
    if (!spooled)
      s.host->log(s.self, ("cannot write the job record: " + error +
                           "; the per-rank files stay in the spool for strata recover")
                              .c_str());
  }
  if (const char* copy = options::record_copy()) {
    if (const std::string error = write_with_deadline(copy, json, timeout); !error.empty())
      s.host->log(s.self, ("cannot write STRATA_PROFILE_JSON: " + error).c_str());
  }
  if (const char* out = options::report()) {
    const std::string report = render_user_report(job_record);
    if (std::strcmp(out, "-") == 0) {
      [[maybe_unused]] ssize_t n = ::write(STDOUT_FILENO, report.data(), report.size());
    } else if (const std::string error = write_with_deadline(out, report, timeout);
               !error.empty()) {
      s.host->log(s.self, ("cannot write STRATA_PROFILE_OUT: " + error).c_str());
    }
  }
  int ok = spooled ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, s.world);
  (void)ok;
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
      s.counting.slots[f] = routine_slot{};
      s.counting.slots[f].min_ns = UINT64_MAX;
      s.uncharged[f] = 0;
      s.polls[f] = poll_figures{};
    }
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
    const job_figures job = reduce_over_ranks(s);
    s.header().final_mono_ns = 0;
    if (s.rank == 0) {
      const std::string report = render_user_report(to_record(job));
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
  h.overhead_ns =
      calls_with_events(s.counting.slots, s.polls.data(), s.traits) * s.per_call_overhead_ns;
  h.status = static_cast<int32_t>(job_status::finalized);
  store_counter_totals(s);
  job_figures job = reduce_over_ranks(s);
  if (s.finalize_comm != MPI_COMM_NULL)
    MPI_Comm_free(&s.finalize_comm);
  if (s.rank == 0) {
    // Measured before the record is rendered, so the record can hold it; rendering, writing and
    // the broadcast of the outcome come after (they end in overhead_ns below, not in the record).
    job.finalize_s = static_cast<double>(mono_ns() - start) / 1e9;
    job.poll_bytes_estimated = any_lean_poll(s.traits) ? 1 : 0;
    write_outputs(s, job);
  } else {
    int ok = 0;
    MPI_Bcast(&ok, 1, MPI_INT, 0, s.world);
    if (ok == 0)
      return; // keep this rank's file for strata recover
  }
  // The record is in the spool: the per-rank files are no longer needed.
  if (s.mapping.ok()) {
    ::unlink(s.mapping.path.c_str());
    s.header().overhead_ns += mono_ns() - start;
  }
}

} // namespace strata::profiler
