// STRATA_COUNTERS: hardware or software event counters (profiler/counters) for the thread that
// called MPI_Init, read once at each MPI boundary and split into events in MPI and in the
// application (Rabenseifner, "Automatic MPI Counter Profiling", section VIII).
#include "state.hpp"

#include "options.hpp"

namespace strata::profiler {

namespace {
thread_local bool t_counting_thread = false;
} // namespace

void on_enter_counting(strata_event* /*ev*/, void* raw) {
  auto* s = static_cast<module_state*>(raw);
  if (t_counting_thread && s->counters.read(s->counter_values.data()))
    s->split.enter_mpi(s->counter_values.data());
}

void on_exit_counting(strata_event* ev, void* raw) {
  auto* s = static_cast<module_state*>(raw);
  if (t_counting_thread && s->counters.read(s->counter_values.data()))
    s->split.leave_mpi(s->counter_values.data());
  on_exit(ev, raw);
}

void store_counter_totals(module_state& s) {
  if (s.counters.size() == 0 || !s.counters.read(s.counter_values.data()))
    return;
  s.split.finish(s.counter_values.data());
  for (size_t i = 0; i < s.counters.size() && i < static_cast<size_t>(max_counters); ++i) {
    s.header().counters_in_mpi[i] = s.split.in_mpi(i);
    s.header().counters_outside_mpi[i] = s.split.outside_mpi(i);
  }
}

void open_counters(module_state& s) {
  const std::string& wanted = options::current().counters;
  if (wanted.empty())
    return;
  const counters::event_list list = counters::parse_event_list(wanted);
  std::vector<std::string> problems;
  if (!list.ok())
    problems.push_back("STRATA_COUNTERS: " + list.error);
  std::vector<std::string> names = list.names;
  if (names.size() > static_cast<size_t>(max_counters)) {
    problems.push_back("STRATA_COUNTERS: at most " + std::to_string(max_counters) +
                       " counters; the rest are ignored");
    names.resize(max_counters);
  }
  s.counters = counters::counter_set::open(names, problems);
  if (s.rank == 0)
    for (const std::string& p : problems) // said once per job, and profiling goes on
      s.host->log(s.self, p.c_str());
  s.counter_values.assign(s.counters.size(), 0);
  s.split = counters::split_accumulator(s.counters.size());
  rank_header& h = s.header();
  h.counter_count = static_cast<int32_t>(s.counters.size());
  for (size_t i = 0; i < s.counters.size(); ++i)
    copy_field(h.counter_names[i], sizeof(h.counter_names[i]), s.counters.name(i));
  if (s.counters.size() > 0 && s.counters.read(s.counter_values.data())) {
    s.split.start(s.counter_values.data());
    t_counting_thread = true;
  }
}

} // namespace strata::profiler
