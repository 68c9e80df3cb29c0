#include "site/mpi_t_index.hpp"

#include "profiler/record/record.hpp"
#include "site/store.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>

namespace strata::site {
namespace {

// FNV-1a over the text, with its length: two sets share a digest only if they share both.
std::string digest_of(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}-{}", h, text.size());
}

// Nearly every job of a site runs with one of its few sets (one per job size and choice of
// settings): a set this thread met before is taken from there, its text shared and its digest
// known, for a hash and one compare of the text instead of FNV byte by byte and a copy.
struct known_set {
  std::shared_ptr<const std::string> text;
  std::string digest;
};
known_set known_set_of(const std::string& text) {
  constexpr size_t kept = 256; // sets: then forgotten all at once (at most a few MB)
  thread_local std::unordered_map<std::string_view, known_set> known; // keys view the texts
  if (const auto it = known.find(text); it != known.end())
    return it->second;
  if (known.size() == kept)
    known.clear();
  known_set set{std::make_shared<const std::string>(text), digest_of(text)};
  known.emplace(*set.text, set);
  return set;
}

// Control variables that hold a launch's identity rather than a setting: Open MPI's launcher
// gives each run its job id, its daemons' addresses and a session directory named after its
// process id. They stay in the record (the job page shows them) but are left out of the
// index, so that runs with the same settings share one set. (MPICH's differ in none.)
bool launch_identity(std::string_view name) {
  static constexpr std::array<std::string_view, 5> names = {
      "ess_base_jobid", "orte_hnp_uri", "orte_local_daemon_uri", "orte_parent_uri",
      "orte_jobfam_session_dir"};
  return std::find(names.begin(), names.end(), name) != names.end();
}

double as_double(const record::pvar_number& n) {
  return std::visit([](auto v) { return static_cast<double>(v); }, n.value);
}

const std::vector<std::string> job_columns_of_index = {"job_id", "settings_id", "owner",
                                                       "end_time"};
const std::vector<std::string> pvar_columns = {"name",      "job_id",    "var_class", "ranks",
                                               "sum_value", "min_value", "max_value"};

// "$1, $2, ..." for n values.
std::string placeholders(size_t n) {
  std::string out;
  for (size_t i = 1; i <= n; ++i)
    out += fmt::format("{}${}", i == 1 ? "" : ", ", i);
  return out;
}

// "($1, $2), ($3, $4), ..." for n pairs of a VALUES list.
std::string pairs_of_placeholders(size_t n) {
  std::string out;
  for (size_t i = 1; i <= n; ++i)
    out += fmt::format("{}(${}, ${})", i == 1 ? "" : ", ", 2 * i - 1, 2 * i);
  return out;
}

// The ids of the sets, adding those not stored yet with their text. A few statements per
// batch whatever its count of sets (one per set was a round trip to PostgreSQL's server each);
// new ones in digest order, so that two writers meet their shared sets in the same order.
std::map<std::string, std::int64_t>
settings_ids(store& db, const std::map<std::string, const std::string*>& sets) {
  constexpr size_t chunk = 500; // sets a statement: under both backends' parameter limits
  std::map<std::string, std::int64_t> ids;
  const auto keep = [&](const store::row& r) { ids[r.text(1)] = r.i64(0); };
  std::vector<store::param> part;
  const auto flush = [&](bool rows) {
    if (part.empty())
      return;
    if (rows)
      db.query("INSERT INTO mpi_t_settings (digest, settings) VALUES " +
                   pairs_of_placeholders(part.size() / 2) +
                   " ON CONFLICT (digest) DO NOTHING RETURNING settings_id, digest",
               part, keep);
    else // stored before, or by another writer that committed meanwhile
      db.query("SELECT settings_id, digest FROM mpi_t_settings WHERE digest IN (" +
                   placeholders(part.size()) + ")",
               part, keep);
    part.clear();
  };
  for (const auto& [digest, text] : sets) {
    part.emplace_back(digest);
    part.emplace_back(*text);
    if (part.size() == 2 * chunk)
      flush(true);
  }
  flush(true);
  for (const auto& [digest, text] : sets) {
    if (ids.contains(digest))
      continue;
    part.emplace_back(digest);
    if (part.size() == chunk)
      flush(false);
  }
  flush(false);
  return ids;
}

} // namespace

mpi_t_rows mpi_t_rows_of(const record::mpi_t_section& section) {
  const std::vector<record::cvar_view> cvars(section.cvars.begin(), section.cvars.end());
  return mpi_t_rows_of(section, cvars);
}

mpi_t_rows mpi_t_rows_of(const record::mpi_t_section& section,
                         const std::vector<record::cvar_view>& cvars) {
  mpi_t_rows rows;
  // settings_text's lines, written straight from the pairs: they are in name order. Into this
  // thread's buffer: the text is kept only for a set not met before.
  std::vector<std::string_view> set(section.cvars_set.begin(), section.cvars_set.end());
  std::sort(set.begin(), set.end());
  thread_local std::string text;
  text.clear();
  append_setting_lines(text, [&](auto line) {
    // Both in name order: one walk finds which the environment set.
    auto from_environment = set.begin();
    for (const auto& [name, value] : cvars) {
      while (from_environment != set.end() && *from_environment < name)
        ++from_environment;
      if (!launch_identity(name))
        line(name, value, from_environment != set.end() && *from_environment == name);
    }
  });
  known_set known = known_set_of(text);
  rows.settings = std::move(known.text);
  rows.digest = std::move(known.digest);
  for (const record::mpi_t_pvar& p : section.pvars)
    if (p.ranks > 0)
      rows.pvars.push_back({p.name, p.var_class, static_cast<std::int64_t>(p.ranks),
                            as_double(p.sum), as_double(p.min), as_double(p.max)});
  return rows;
}

void add_mpi_t(store& db, const std::vector<stored_job>& jobs, const insert_result& r) {
  std::map<std::string, const std::string*> sets; // digest -> text, of the batch's jobs
  for (size_t i = 0; i < jobs.size(); ++i)
    if (r.was_new[i] && jobs[i].mpi_t)
      sets.try_emplace(jobs[i].mpi_t->digest, jobs[i].mpi_t->settings.get());
  if (sets.empty())
    return;
  const std::map<std::string, std::int64_t> ids = settings_ids(db, sets);
  std::vector<std::vector<store::param>> job_rows, pvar_rows;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!r.was_new[i] || !jobs[i].mpi_t)
      continue;
    const job_row& j = jobs[i].job;
    job_rows.push_back({r.job_ids[i], ids.at(jobs[i].mpi_t->digest), j.owner, j.end_time});
    // A name the library listed twice (Open MPI lists one again each time MPI_T starts) is
    // kept once, its first entry.
    std::vector<std::string_view> seen;
    for (const pvar_row& p : jobs[i].mpi_t->pvars) {
      if (std::find(seen.begin(), seen.end(), p.name) != seen.end())
        continue;
      seen.push_back(p.name);
      pvar_rows.push_back({p.name, r.job_ids[i], p.var_class, p.ranks, p.sum, p.min, p.max});
    }
  }
  db.append("job_mpi_t", job_columns_of_index, job_rows);
  db.append("job_pvars", pvar_columns, pvar_rows);
}

void keep_settings_as_text(store& db) {
  std::map<std::int64_t, std::vector<setting>> sets;
  db.query("SELECT settings_id, name, value, from_environment FROM mpi_t_setting_values", {},
           [&](const store::row& r) {
             sets[r.i64(0)].push_back({r.text(1), r.text(2), r.i64(3) != 0});
           });
  for (const auto& [id, settings] : sets)
    db.query("UPDATE mpi_t_settings SET settings = $1 WHERE settings_id = $2",
             {settings_text(settings), id}, [](const store::row&) {});
  db.execute("DROP TABLE mpi_t_setting_values");
}

void fill_mpi_t(store& db) {
  constexpr std::int64_t chunk = 2000; // records at a time: bounded memory at any store size
  for (std::int64_t after = 0;;) {
    std::vector<stored_job> jobs;
    insert_result all;
    db.query("SELECT j.job_id, j.owner, j.end_time, r.record FROM jobs j JOIN job_records r ON "
             "r.job_id = j.job_id WHERE j.job_id > $1 ORDER BY j.job_id LIMIT $2",
             {after, chunk}, [&](const store::row& row) {
               stored_job s;
               s.job.job_id = row.i64(0);
               s.job.owner = row.text(1);
               s.job.end_time = row.i64(2);
               const std::string json = unpack_record(row.blob(3));
               // Most records stored before MPI_T was read have none: no need to parse them.
               if (json.find("\"mpi_t\"") != std::string::npos) {
                 const record::parse_result parsed = record::parse_record(json);
                 if (parsed.ok() && parsed.record->mpi_t)
                   s.mpi_t = mpi_t_rows_of(*parsed.record->mpi_t);
               }
               jobs.push_back(std::move(s));
             });
    if (jobs.empty())
      return;
    all.was_new.assign(jobs.size(), true);
    for (const stored_job& s : jobs)
      all.job_ids.push_back(s.job.job_id);
    add_mpi_t(db, jobs, all);
    after = jobs.back().job.job_id;
  }
}

} // namespace strata::site
