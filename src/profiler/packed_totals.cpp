#include "profiler/packed_totals.hpp"

#include "profiler/call_sites.hpp"
#include "profiler/routine_classes.hpp"

#include <algorithm>
#include <cstring>

namespace strata::profiler {

namespace {

constexpr size_t job_words = sizeof(packed_job) / sizeof(uint64_t);
constexpr size_t routine_words = sizeof(packed_routine) / sizeof(uint64_t);

// The lower value wins, and on a tie the lower rank: the result does not depend on the order in
// which MPI combines the ranks.
template <typename T> void keep_min(T& value, uint64_t& rank, T other, uint64_t other_rank) {
  if (other < value || (other == value && other_rank < rank)) {
    value = other;
    rank = other_rank;
  }
}
template <typename T> void keep_max(T& value, uint64_t& rank, T other, uint64_t other_rank) {
  if (other > value || (other == value && other_rank < rank)) {
    value = other;
    rank = other_rank;
  }
}

double seconds(uint64_t ns) {
  return static_cast<double>(ns) / 1e9;
}

} // namespace

size_t packed_words(uint64_t routine_count) {
  return job_words + static_cast<size_t>(routine_count) * routine_words;
}

uint64_t rank_mpi_ns(const std::vector<std::string>& names, const routine_slot* slots,
                     size_t count) {
  uint64_t ns = 0;
  for (size_t i = 0; i < count && i < names.size(); ++i)
    if (!excluded_from_mpi_time(names[i]))
      ns += slots[i].time_ns;
  return ns;
}

uint64_t rank_wall_ns(const rank_header& h) {
  const uint64_t end = h.final_mono_ns != 0 ? h.final_mono_ns : h.last_mono_ns;
  return end > h.init_mono_ns && h.init_mono_ns != 0 ? end - h.init_mono_ns : 0;
}

packed_totals pack_rank(const rank_header& header, int rank, const std::vector<std::string>& names,
                        const routine_slot* slots, const std::vector<int>& functions) {
  packed_totals out(packed_words(functions.size()));
  const auto me = static_cast<uint64_t>(rank);
  packed_job job{};
  job.routine_count = functions.size();
  job.mpi_ns = rank_mpi_ns(names, slots, names.size());
  job.overhead_ns = header.overhead_ns;
  job.wall_ns = rank_wall_ns(header);
  // As add_rank computes it from a rank file, so that both paths give the same figure.
  const double wall = seconds(job.wall_ns);
  const double percent = wall > 0 ? 100.0 * seconds(job.mpi_ns) / wall : 0.0;
  job.mpi_percent_sum = percent;
  job.mpi_percent_min = percent;
  job.mpi_percent_min_rank = me;
  job.mpi_percent_max = percent;
  job.mpi_percent_max_rank = me;
  std::copy_n(header.counters_in_mpi, max_counters, job.counters_in_mpi);
  std::copy_n(header.counters_outside_mpi, max_counters, job.counters_outside_mpi);
  job.callsites_dropped = header.callsites_dropped;
  job.model_clamped = header.model_clamped;
  std::memcpy(out.data(), &job, sizeof(job));
  for (size_t i = 0; i < functions.size(); ++i) {
    const routine_slot& slot = slots[functions[i]];
    packed_routine row{};
    copy_routine_figures(row, slot);
    row.calls_min = row.calls_max = slot.calls;
    row.time_min_ns = row.time_max_ns = slot.time_ns;
    row.calls_min_rank = row.calls_max_rank = row.time_min_rank = row.time_max_rank = me;
    std::memcpy(out.data() + job_words + i * routine_words, &row, sizeof(row));
  }
  return out;
}

bool combine_packed(const uint64_t* in, uint64_t* inout) {
  packed_job a{};
  packed_job b{};
  std::memcpy(&a, in, sizeof(a));
  std::memcpy(&b, inout, sizeof(b));
  if (a.routine_count != b.routine_count)
    return false;
  b.mpi_ns += a.mpi_ns;
  b.overhead_ns += a.overhead_ns;
  b.wall_ns = std::max(b.wall_ns, a.wall_ns);
  b.mpi_percent_sum += a.mpi_percent_sum;
  keep_min(b.mpi_percent_min, b.mpi_percent_min_rank, a.mpi_percent_min, a.mpi_percent_min_rank);
  keep_max(b.mpi_percent_max, b.mpi_percent_max_rank, a.mpi_percent_max, a.mpi_percent_max_rank);
  for (int c = 0; c < max_counters; ++c) {
    b.counters_in_mpi[c] += a.counters_in_mpi[c];
    b.counters_outside_mpi[c] += a.counters_outside_mpi[c];
  }
  b.callsites_dropped += a.callsites_dropped;
  b.model_clamped += a.model_clamped;
  std::memcpy(inout, &b, sizeof(b));
  for (uint64_t i = 0; i < a.routine_count; ++i) {
    const size_t at = job_words + static_cast<size_t>(i) * routine_words;
    packed_routine x{};
    packed_routine y{};
    std::memcpy(&x, in + at, sizeof(x));
    std::memcpy(&y, inout + at, sizeof(y));
    add_routine_figures(y, x);
    keep_min(y.calls_min, y.calls_min_rank, x.calls_min, x.calls_min_rank);
    keep_max(y.calls_max, y.calls_max_rank, x.calls_max, x.calls_max_rank);
    keep_min(y.time_min_ns, y.time_min_rank, x.time_min_ns, x.time_min_rank);
    keep_max(y.time_max_ns, y.time_max_rank, x.time_max_ns, x.time_max_rank);
    std::memcpy(inout + at, &y, sizeof(y));
  }
  return true;
}

uint64_t unpack_totals(const packed_totals& all, const std::vector<std::string>& names,
                       const std::vector<int>& functions, job_figures& job) {
  packed_job j{};
  if (all.size() < job_words)
    return 0;
  std::memcpy(&j, all.data(), sizeof(j));
  job.wall_s = seconds(j.wall_ns);
  job.mpi_s = seconds(j.mpi_ns);
  job.overhead_s = seconds(j.overhead_ns);
  job.mpi_percent = {j.mpi_percent_min, j.mpi_percent_sum, j.mpi_percent_max,
                     static_cast<int>(j.mpi_percent_min_rank),
                     static_cast<int>(j.mpi_percent_max_rank)};
  std::copy_n(j.counters_in_mpi, max_counters, job.counters_in_mpi);
  std::copy_n(j.counters_outside_mpi, max_counters, job.counters_outside_mpi);
  job.callsites_dropped = j.callsites_dropped;
  const size_t rows = std::min<size_t>(j.routine_count, functions.size());
  if (all.size() < packed_words(rows))
    return j.model_clamped;
  for (size_t i = 0; i < rows; ++i) {
    packed_routine row{};
    std::memcpy(&row, all.data() + job_words + i * routine_words, sizeof(row));
    if (row.calls == 0)
      continue; // called on no rank (the record lists only routines called somewhere)
    routine_total& r = job.routines[names[static_cast<size_t>(functions[i])]];
    copy_routine_figures(r, row);
    r.calls_per_rank = {static_cast<double>(row.calls_min), static_cast<double>(row.calls),
                        static_cast<double>(row.calls_max), static_cast<int>(row.calls_min_rank),
                        static_cast<int>(row.calls_max_rank)};
    r.time_per_rank = {seconds(row.time_min_ns), seconds(row.time_ns), seconds(row.time_max_ns),
                       static_cast<int>(row.time_min_rank), static_cast<int>(row.time_max_rank)};
  }
  return j.model_clamped;
}

std::vector<uint32_t> reduction_layout(const routine_slot* slots, size_t functions) {
  std::vector<uint32_t> layout(functions);
  for (size_t f = 0; f < functions; ++f)
    layout[f] = slots[f].calls != 0 ? 1u : 0u;
  return layout;
}

reduction_plan plan_reduction(const std::vector<uint32_t>& layout, size_t functions) {
  reduction_plan plan;
  for (size_t f = 0; f < functions && f < layout.size(); ++f)
    if (layout[f] != 0)
      plan.functions.push_back(static_cast<int>(f));
  return plan;
}

void complete_at_root(job_figures& job, const packed_totals& all,
                      const std::vector<std::string>& names, const std::vector<int>& functions,
                      const ranks_summary& texts, const rank_header& facts, int world_size,
                      int ranks_reported, bool compared_with_model) {
  const uint64_t clamped = unpack_totals(all, names, functions, job);
  job.host_names = texts.hosts();
  job.callsites = texts.ordered_callsites();
  if (compared_with_model)
    job.model_clamped_calls = static_cast<int64_t>(clamped);
  job.facts = facts;
  job.ranks = world_size;
  job.ranks_reported = ranks_reported;
  job.partial = ranks_reported < world_size;
  job.status = job_status::finalized;
}

} // namespace strata::profiler
