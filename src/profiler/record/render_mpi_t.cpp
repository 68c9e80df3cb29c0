#include "profiler/record/render_mpi_t.hpp"

#include <fmt/format.h>
#include <variant>

namespace strata::record {

std::string pvar_text(const pvar_number& number) {
  return std::visit([](auto v) { return fmt::format("{}", v); }, number.value);
}

std::vector<mpi_t_table> mpi_t_tables(const mpi_t_section& section) {
  std::vector<mpi_t_table> out;
  mpi_t_table summary{"MPI library variables (MPI_T)",
                      false,
                      {},
                      section.problem.empty() ? section.not_read.value_or("") : section.problem};
  if (section.pvars_exposed && section.cvars_exposed) {
    summary.rows.push_back({"performance variables", std::to_string(*section.pvars_exposed)});
    summary.rows.push_back({"control variables", std::to_string(*section.cvars_exposed)});
    summary.rows.push_back({"events", section.events_exposed
                                          ? std::to_string(*section.events_exposed)
                                          : std::string("none (no MPI_T events before MPI 4.0)")});
  } else {
    summary.rows.push_back({"variables exposed", "not known: MPI_T was not started"});
  }
  out.push_back(std::move(summary));

  mpi_t_table read{"Performance variables over ranks", true, {}, ""};
  read.rows.push_back({"variable", "class", "binding", "sum", "min", "min rank", "max", "max rank",
                       "ranks", "description"});
  mpi_t_table unread{"Performance variables not read", true, {}, ""};
  unread.rows.push_back({"variable", "class", "binding", "why"});
  for (const mpi_t_pvar& p : section.pvars) {
    if (p.ranks == 0) {
      unread.rows.push_back({p.name, p.var_class, p.binding, p.unread});
      continue;
    }
    read.rows.push_back({p.name, p.var_class, p.binding, pvar_text(p.sum), pvar_text(p.min),
                         std::to_string(p.min_rank), pvar_text(p.max), std::to_string(p.max_rank),
                         std::to_string(p.ranks), p.description});
  }
  if (read.rows.size() > 1) {
    read.note = "a rank's value sums its elements (one per peer for a communicator's), except "
                "watermarks, states and percentages (the highest; the lowest for low "
                "watermarks); counters, timers and aggregates count from the last MPI_Pcontrol(2)";
    out.push_back(std::move(read));
  } else if (section.problem.empty() && !section.not_read) {
    out.front().note = section.pvars_exposed.value_or(0) == 0
                           ? "the MPI library exposes no performance variables"
                           : "no performance variable could be read";
  }
  if (unread.rows.size() > 1)
    out.push_back(std::move(unread));

  mpi_t_table set{"MPI control variables the environment set", true, {{"variable", "value"}}, ""};
  for (const std::string& name : section.cvars_set) {
    const auto it = section.cvars.find(name);
    set.rows.push_back({name, it != section.cvars.end() ? it->second : "-"});
  }
  set.note =
      fmt::format("{} control variables and their values are in the record", section.cvars.size());
  if (set.rows.size() > 1)
    out.push_back(std::move(set));
  else if (!section.cvars.empty())
    out.front().note += (out.front().note.empty() ? "" : "; ") + set.note;
  return out;
}

} // namespace strata::record
