// The job's figures over all ranks, at MPI_Finalize (the record) and MPI_Pcontrol(4) (a
// subtotal): a few KB on rank 0 whatever the job's size, in three collectives (four when one
// rank's call-site lines are over twice as long as another's): which routines any rank called
// and how long the ranks' texts are (MPI_Allreduce), every figure in one MPI_Reduce with a
// user-defined operation (profiler/packed_totals.hpp), and the host names and call-site lines
// (MPI_Gather); then the MPI_Bcast of whether the record was written. With oversubscribed ranks
// each collective needs every rank scheduled: their number is the cost.
#include "state.hpp"

#include "options.hpp"
#include "profiler/call_sites.hpp"
#include "profiler/clock.hpp"
#include "profiler/clock_check.hpp"
#include "profiler/packed_totals.hpp"
#include "profiler/record/record.hpp"
#include "profiler/spool.hpp"
#include "user_report.hpp"

#include <cstdio>
#include <cstring>
#include <string_view>
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

// Every rank's text (host name, call-site lines) to rank 0, handed to `take` in rank order.
// One MPI_Gather of blocks as long as the longest text when that wastes little; otherwise the
// lengths, then MPI_Gatherv.
template <typename Take>
void gather_rank_texts(module_state& s, std::string text, uint32_t longest, uint32_t shortest,
                       Take take) {
  const bool root = s.rank == 0;
  std::string all;
  if (gather_in_fixed_blocks(longest, shortest)) {
    const int block = static_cast<int>(longest);
    text.resize(longest, '\0');
    all.resize(root ? longest * static_cast<size_t>(s.world_size) : 0);
    MPI_Gather(text.data(), block, MPI_CHAR, all.data(), block, MPI_CHAR, 0, s.world);
    if (root)
      for (int r = 0; r < s.world_size; ++r)
        take(std::string_view(all).substr(static_cast<size_t>(r) * longest, longest));
    return;
  }
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<size_t>(root ? s.world_size : 1));
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, s.world);
  std::vector<int> offsets(lengths.size());
  if (root) {
    size_t total = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
      offsets[r] = static_cast<int>(total);
      total += static_cast<size_t>(lengths[r]);
    }
    all.resize(total);
  }
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
              0, s.world);
  if (root)
    for (size_t r = 0; r < lengths.size(); ++r)
      take(std::string_view(all).substr(static_cast<size_t>(offsets[r]),
                                        static_cast<size_t>(lengths[r])));
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
job_figures reduce_over_ranks(module_state& s) {
  const size_t n = s.names.size();
  const rank_header& h = s.header();
  std::string kernel_clocksource;
  const rank_clock clock = check_event_clock(s, kernel_clocksource);
  const double factor = duration_factor(clock);
  std::vector<routine_slot> corrected;
  const routine_slot* slots = s.counting.slots;
  if (factor != 1.0) {
    corrected = scaled_slots(slots, n, factor);
    slots = corrected.data();
  }
  std::string lines;
  if (const callsite_slot* sites = s.counting.callsites.slots; sites != nullptr) {
    std::vector<callsite_slot> corrected_sites;
    if (factor != 1.0) {
      corrected_sites = scaled_callsites(sites, callsite_table::capacity, factor);
      sites = corrected_sites.data();
    }
    lines = callsite_lines(resolve_callsites(sites, callsite_table::capacity, s.names));
  }
  const std::string text = rank_text(std::string(h.host, ::strnlen(h.host, sizeof(h.host))), lines);
  std::vector<uint32_t> layout = reduction_layout(slots, n, text.size());
  append_clock_layout(layout, clock);
  MPI_Allreduce(MPI_IN_PLACE, layout.data(), static_cast<int>(layout.size()), MPI_UINT32_T, MPI_MAX,
                s.world);
  const reduction_plan plan = plan_reduction(layout, n);

  const packed_totals mine = pack_rank(h, s.rank, s.names, slots, plan.functions);
  packed_totals all(s.rank == 0 ? mine.size() : 1);
  MPI_Datatype packed_type = MPI_DATATYPE_NULL;
  MPI_Type_contiguous(static_cast<int>(mine.size()), MPI_UINT64_T, &packed_type);
  MPI_Type_commit(&packed_type);
  MPI_Op combine = MPI_OP_NULL;
  MPI_Op_create(combine_packed_op, 1, &combine);
  MPI_Reduce(mine.data(), all.data(), 1, packed_type, combine, 0, s.world);
  MPI_Op_free(&combine);
  MPI_Type_free(&packed_type);

  job_figures job;
  std::string all_lines;
  gather_rank_texts(s, text, plan.longest_text, plan.shortest_text,
                    [&](std::string_view rank) { add_rank_text(rank, job, all_lines); });
  if (s.rank == 0) {
    complete_at_root(job, all, s.names, plan.functions, all_lines, h, s.world_size,
                     s.model.loaded());
    job.clock =
        clock_from_layout(layout.data() + layout.size() - clock_layout_words, kernel_clocksource);
  }
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
