#include "site/models.hpp"

#include "site/store.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>

namespace strata::site {
namespace {

constexpr int min_sizes = 3;

std::string ranks_list(const std::vector<std::int64_t>& ranks) {
  std::string out;
  for (const std::int64_t r : ranks)
    out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

std::string program_name(const program& p) {
  return p.owner + " " + p.executable + (p.arguments.empty() ? "" : " " + p.arguments);
}

// The models of one program from its newest complete runs at each size, read through the runs'
// key (a program of tens of thousands of runs is not read whole).
program_models model_program(store& db, const program& prog, const model_options& o) {
  program_models out;
  out.prog = prog;
  std::map<std::int64_t, std::vector<program_run>> chosen; // by ranks, newest first
  std::vector<std::int64_t> measured;                      // sizes with a complete run
  db.query("SELECT ranks, SUM(complete), COUNT(*) FROM program_runs WHERE program_id = $1 AND "
           "end_time >= $2 GROUP BY ranks ORDER BY ranks",
           {prog.id, o.since}, [&](const store::row& r) {
             out.left_out += static_cast<int>(r.i64(2) - r.i64(1));
             if (r.i64(1) > 0)
               measured.push_back(r.i64(0));
           });
  for (const std::int64_t ranks : measured)
    db.query("SELECT job_id, ranks, end_time, complete, wall_s, mpi_s FROM program_runs WHERE "
             "program_id = $1 AND ranks = $2 AND end_time >= $3 AND complete = 1 ORDER BY "
             "end_time DESC, job_id DESC LIMIT $4",
             {prog.id, ranks, o.since, std::int64_t{o.runs_per_size}}, [&](const store::row& r) {
               chosen[ranks].push_back(
                   {r.i64(0), r.i64(1), r.i64(2), r.i64(3) != 0, r.f64(4), r.f64(5)});
             });
  std::vector<std::int64_t> job_ids;
  for (const auto& [ranks, runs] : chosen) {
    out.ranks.push_back(ranks);
    out.runs += static_cast<int>(runs.size());
    for (const program_run& r : runs)
      job_ids.push_back(r.job_id);
  }
  if (out.ranks.empty()) {
    out.missing = "no complete runs";
    return out;
  }
  if (out.ranks.size() < static_cast<size_t>(min_sizes) || out.ranks.front() < 1) {
    out.missing =
        fmt::format("measured at {} size{} ({} ranks); a model needs {} or more", out.ranks.size(),
                    out.ranks.size() == 1 ? "" : "s", ranks_list(out.ranks), min_sizes);
    return out;
  }
  const auto routines = routine_times(db, job_ids);
  std::map<std::string, bool> names;
  for (const auto& [job, times] : routines)
    for (const auto& [name, t] : times)
      names[name] = names[name] || t > 0; // routines counted without timing have no model
  const auto samples = [&](const auto& value) {
    std::vector<size_sample> sizes;
    for (const auto& [ranks, runs] : chosen) {
      std::vector<double> values;
      for (const program_run& r : runs)
        values.push_back(value(r));
      sizes.push_back(sample_of(ranks, std::move(values)));
    }
    return sizes;
  };
  const auto add = [&](std::string name, std::vector<size_sample> sizes) {
    const scaling_model m = fit_scaling_model(sizes);
    out.models.push_back({std::move(name), m, std::move(sizes)});
  };
  add("wall", samples([](const program_run& r) { return r.wall_s; }));
  add("MPI", samples([](const program_run& r) { return r.mpi_s; }));
  std::vector<quantity_model> per_routine;
  for (const auto& [routine_name, timed] : names) {
    if (!timed)
      continue;
    const std::string& name = routine_name; // a variable a lambda can capture (clang 14)
    const std::vector<size_sample> sizes = samples([&](const program_run& r) {
      const auto job = routines.find(r.job_id);
      if (job == routines.end())
        return 0.0;
      const auto t = job->second.find(name);
      return t == job->second.end() ? 0.0 : t->second / static_cast<double>(r.ranks);
    });
    per_routine.push_back({name, fit_scaling_model(sizes), sizes});
  }
  std::sort(per_routine.begin(), per_routine.end(),
            [](const quantity_model& a, const quantity_model& b) {
              return a.sizes.back().median != b.sizes.back().median
                         ? a.sizes.back().median > b.sizes.back().median
                         : a.name < b.name;
            });
  for (std::int64_t factor : {2, 4}) {
    const std::int64_t p = out.ranks.back() * factor;
    out.predicted_ranks.push_back(p);
    std::string top;
    double longest = 0;
    for (const quantity_model& q : per_routine)
      if (const double t = q.model.at(static_cast<double>(p)); t > longest) {
        longest = t;
        top = q.name;
      }
    out.dominant.push_back(top);
  }
  for (quantity_model& q : per_routine)
    out.models.push_back(std::move(q));
  return out;
}

std::string seconds(double s) {
  return fmt::format("{:.4g} s", s);
}

} // namespace

std::vector<program_models> build_models(store& db, const model_options& options) {
  std::vector<program_models> out;
  for (const program& p : find_programs(db, options.owner, options.executable))
    out.push_back(model_program(db, p, options));
  return out;
}

std::string render_models_text(const std::vector<program_models>& programs) {
  std::string out;
  for (const program_models& p : programs) {
    std::string left_out;
    if (p.left_out > 0)
      left_out = fmt::format("; {} partial or unfinished run{} left out", p.left_out,
                             p.left_out == 1 ? "" : "s");
    if (!p.missing.empty()) {
      out += fmt::format("{}: no model: {}{}\n", program_name(p.prog), p.missing, left_out);
      continue;
    }
    out += fmt::format("{}: {} sizes ({} ranks), {} runs{}\n", program_name(p.prog), p.ranks.size(),
                       ranks_list(p.ranks), p.runs, left_out);
    for (const quantity_model& q : p.models)
      out += fmt::format("  {}: {} s per rank, from {} sizes, {} runs (error {:.1f} %)\n", q.name,
                         q.model.formula(), q.sizes.size(), p.runs, 100 * q.model.error);
    for (size_t k = 0; k < p.predicted_ranks.size(); ++k) {
      const double x = static_cast<double>(p.predicted_ranks[k]);
      out += fmt::format("  at {} ranks: wall {}, MPI {} per rank", p.predicted_ranks[k],
                         seconds(p.models[0].model.at(x)), seconds(p.models[1].model.at(x)));
      if (!p.dominant[k].empty()) {
        const auto q =
            std::find_if(p.models.begin() + 2, p.models.end(),
                         [&](const quantity_model& m) { return m.name == p.dominant[k]; });
        out += fmt::format("; {} dominates ({})", p.dominant[k], seconds(q->model.at(x)));
      }
      out += "\n";
    }
  }
  if (out.empty())
    out = "No programs in the store match.\n";
  return out;
}

nlohmann::json models_json(const std::vector<program_models>& programs) {
  nlohmann::json models = nlohmann::json::array(), list = nlohmann::json::array();
  for (const program_models& p : programs) {
    nlohmann::json predictions = nlohmann::json::array();
    for (size_t k = 0; k < p.predicted_ranks.size(); ++k) {
      const double x = static_cast<double>(p.predicted_ranks[k]);
      predictions.push_back({{"ranks", p.predicted_ranks[k]},
                             {"wall", p.models[0].model.at(x)},
                             {"MPI", p.models[1].model.at(x)},
                             {"dominant", p.dominant[k]}});
    }
    list.push_back({{"program_id", p.prog.id},
                    {"owner", p.prog.owner},
                    {"executable", p.prog.executable},
                    {"arguments", p.prog.arguments},
                    {"ranks", p.ranks},
                    {"runs", p.runs},
                    {"left_out", p.left_out},
                    {"modelled", p.missing.empty()},
                    {"missing", p.missing},
                    {"predictions", predictions}});
    for (const quantity_model& q : p.models) {
      nlohmann::json medians = nlohmann::json::array(), ahead = nlohmann::json::array();
      for (const size_sample& s : q.sizes)
        medians.push_back({{"ranks", s.ranks},
                           {"median", s.median},
                           {"low", s.low},
                           {"high", s.high},
                           {"runs", s.runs}});
      for (const std::int64_t r : p.predicted_ranks)
        ahead.push_back({{"ranks", r}, {"seconds", q.model.at(static_cast<double>(r))}});
      models.push_back({{"program_id", p.prog.id},
                        {"owner", p.prog.owner},
                        {"executable", p.prog.executable},
                        {"arguments", p.prog.arguments},
                        {"routine", q.name},
                        {"i", q.model.i.value()},
                        {"i_text", exponent_text(q.model.i)},
                        {"j", q.model.j},
                        {"c0", q.model.c0},
                        {"c1", q.model.c1},
                        {"formula", q.model.formula()},
                        {"ranks", p.ranks},
                        {"runs", p.runs},
                        {"error", q.model.error},
                        {"noise", q.model.noise},
                        {"medians", medians},
                        {"predictions", ahead}});
    }
  }
  return {{"models", models}, {"programs", list}};
}

std::string render_models_json(const std::vector<program_models>& programs) {
  return models_json(programs).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

} // namespace strata::site
