// Jobs lists (site/lists.hpp): the WHERE and ORDER BY of a filter, the text search through the
// `executables` table, and the choice of the index a page is read through.
#include "site/lists.hpp"

#include "site/store.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::site {
namespace {

// What a search text matches in `executables`, looked up before the jobs are (search).
struct search_terms {
  std::string byte_order;                              // store::byte_order_collation()
  std::optional<std::vector<std::string>> executables; // none: too many, matched in the query
  bool record_ids = true;                              // some record id starts with the text
};

// How a jobs list picks its page of ids (jobs_and_count). A backend's planner cannot
// tell, without statistics of the combination (SQLite keeps none), whether walking the sort
// order's index and filtering inside it stops soon (many matches) or reads a million entries
// (few matches); the bounded count tells, and the query is then written so that only the
// chosen index can serve it: a filter on another column becomes an expression (`col + 0`,
// `col || ''`, the same on both backends), or the sort key does.
enum class list_plan {
  planner,   // as written: the backend chooses
  by_filter, // few matches: the index of a filter, then sort them
  by_order,  // many matches: the sort order's index, stopping at the page's last entry
};

// The column an order sorts on first: the leading column of its site-wide index.
std::string_view order_column(job_order o) {
  switch (o) {
  case job_order::mpi_percent_desc:
    return "mpi_percent";
  case job_order::cpu_time_desc:
    return "cpu_time_s";
  case job_order::ranks_desc:
    return "ranks";
  case job_order::mpi_time_desc:
    return "mpi_time_s";
  case job_order::exit_code_desc:
    return "exit_code";
  case job_order::end_asc:
  case job_order::end_desc:
  case job_order::latest:
    break;
  }
  return "end_time";
}

// A search text's upper bound for a prefix range in byte order: no text starting with `text`
// sorts at or after it, except one continuing with U+10FFFF (the largest code point, a
// noncharacter, so kept as valid UTF-8 for PostgreSQL).
std::string prefix_end(const std::string& text) {
  return text + "\xf4\x8f\xbf\xbf";
}

// The WHERE clause of a job filter over `jobs`, with its parameters.
std::string where_clause(const job_filter& f, std::vector<store::param>& params,
                         const search_terms& terms, list_plan plan = list_plan::planner,
                         job_order order = job_order::end_desc) {
  std::string sql = " WHERE 1=1";
  // Under by_order only the sort column stays usable by an index.
  auto column = [&](std::string_view name, bool is_text) {
    if (plan != list_plan::by_order || name == order_column(order))
      return std::string(name);
    return "(" + std::string(name) + (is_text ? " || '')" : " + 0)");
  };
  // `condition` ends with its operator; the parameter's number follows.
  auto add = [&](const std::string& condition, store::param p) {
    params.push_back(std::move(p));
    sql += " AND " + condition + " $" + std::to_string(params.size());
  };
  if (f.when) {
    add(column("end_time", false) + " >=", f.when->from);
    add(column("end_time", false) + " <", f.when->to);
  }
  // With a search, never the owner's index: jobs_by_executable holds the owner too, and reads
  // no row (SQLite's planner took the owner's index and read each of the busiest user's
  // 214,000 rows for their executable: 1.3-2.2 s at a million jobs).
  if (f.owner)
    add((f.text ? "(owner || '')" : column("owner", true)) + " =", *f.owner);
  if (f.language)
    add("language =", *f.language);
  if (f.min_mpi_percent)
    add(column("mpi_percent", false) + " >", *f.min_mpi_percent);
  if (f.min_ranks)
    add(column("ranks", false) + " >=", *f.min_ranks);
  if (f.max_ranks)
    add(column("ranks", false) + " <=", *f.max_ranks);
  if (f.account)
    add("slurm_account =", *f.account);
  if (f.partition)
    add("slurm_partition =", *f.partition);
  if (f.nonzero_exit)
    sql += " AND exit_code <> 0"; // NULL (not known) is not <> 0 either; jobs_failed's condition
  if (f.text) {
    // Executables by substring (strpos, not LIKE: no wildcards, the same on both backends)
    // through the small `executables` table, record ids by prefix (migration 6).
    // The executables found are given as a list of values, not a subquery: PostgreSQL
    // combines an index's IN list and the record ids' range (a bitmap OR), while with a
    // subquery it scans every job (0.6 s at a million). A part that matches nothing is left
    // out: with an OR PostgreSQL reads every matching row (a bitmap heap scan, 240 ms for
    // 75,000 jobs), with one part it counts and sorts from the index alone.
    // (Each parameter is used: PostgreSQL cannot type one that is not.)
    std::vector<std::string> either;
    if (!terms.executables) {
      params.push_back(*f.text);
      either.push_back(column("executable", true) +
                       " IN (SELECT executable FROM executables WHERE strpos(executable, $" +
                       std::to_string(params.size()) + ") > 0)");
    } else if (!terms.executables->empty()) {
      std::string in = column("executable", true) + " IN (";
      for (size_t i = 0; i < terms.executables->size(); ++i) {
        params.emplace_back((*terms.executables)[i]);
        in += (i == 0 ? "$" : ", $") + std::to_string(params.size());
      }
      either.push_back(in + ")");
    }
    if (terms.record_ids) {
      params.push_back(*f.text);
      const std::string p = "$" + std::to_string(params.size());
      params.push_back(prefix_end(*f.text));
      const std::string end = "$" + std::to_string(params.size());
      const std::string id = column("record_id", true) + " " + terms.byte_order;
      either.push_back("(" + id + " >= " + p + " AND " + id + " < " + end + ")");
    }
    if (either.empty())
      sql += " AND 1=0";
    else if (either.size() == 1)
      sql += " AND " + either[0];
    else
      sql += " AND (" + either[0] + " OR " + either[1] + ")";
  }
  return sql;
}

std::string order_clause(job_order o, list_plan plan = list_plan::planner) {
  // by_filter: the sort key as an expression, so that no index is walked for its order.
  const std::string key = plan == list_plan::by_filter
                              ? "(" + std::string(order_column(o)) + " + 0)"
                              : std::string(order_column(o));
  switch (o) {
  case job_order::end_asc:
    return " ORDER BY " + key + " ASC, job_id ASC";
  case job_order::latest:
    return " ORDER BY " + key + " DESC";
  case job_order::end_desc:
    return " ORDER BY " + key + " DESC, job_id DESC";
  case job_order::mpi_percent_desc:
  case job_order::cpu_time_desc:
  case job_order::ranks_desc:
  case job_order::mpi_time_desc:
    break;
  case job_order::exit_code_desc:
    // Both backends put NULL last when told (PostgreSQL's DESC puts it first otherwise).
    return " ORDER BY " + key + " DESC NULLS LAST, end_time DESC, job_id DESC";
  }
  // Ties (many jobs share a size, some an MPI % or CPU time) newest first: the site-wide
  // index of each order holds end_time next, so a walk sorts no group of equal keys.
  return " ORDER BY " + key + " DESC, end_time DESC, job_id DESC";
}

// A filter's search text looked up in `executables` first.
search_terms search(store& db, const job_filter& filter) {
  search_terms terms;
  terms.byte_order = db.byte_order_collation();
  if (!filter.text)
    return terms;
  // A site's programs are few; past this many the query matches them itself.
  constexpr std::int64_t most = 1000;
  terms.executables.emplace();
  db.query("SELECT executable FROM executables WHERE strpos(executable, $1) > 0 LIMIT $2",
           {*filter.text, most + 1},
           [&](const store::row& r) { terms.executables->push_back(r.text(0)); });
  if (static_cast<std::int64_t>(terms.executables->size()) > most)
    terms.executables.reset();
  terms.record_ids = false;
  const std::string id = "record_id " + terms.byte_order;
  db.query("SELECT 1 FROM jobs WHERE " + id + " >= $1 AND " + id + " < $2 LIMIT 1",
           {*filter.text, prefix_end(*filter.text)},
           [&](const store::row&) { terms.record_ids = true; });
  return terms;
}

// min(count_jobs(filter), cap), without counting further: a page's "more than N jobs".
std::int64_t count_up_to(store& db, const job_filter& filter, std::int64_t cap,
                         const search_terms& terms) {
  std::vector<store::param> params;
  std::string sql =
      "SELECT COUNT(*) FROM (SELECT 1 FROM jobs" + where_clause(filter, params, terms);
  params.push_back(cap);
  sql += " LIMIT $" + std::to_string(params.size()) + ") AS capped";
  std::int64_t n = 0;
  db.query(sql, params, [&](const store::row& r) { n = r.i64(0); });
  return n;
}

} // namespace

std::vector<job_row> jobs(store& db, const job_filter& filter) {
  return jobs_and_count(db, filter, 0).rows;
}

job_page jobs_and_count(store& db, const job_filter& filter, std::int64_t cap) {
  job_page page;
  const search_terms terms = search(db, filter);
  // Lists by end time without a search have an index that gives both the filter and the order
  // (the owner's, the period's); the others choose by the number of matches, counted only
  // then (the reports' lists of critical jobs count nothing).
  const bool by_end = filter.order == job_order::end_desc || filter.order == job_order::end_asc ||
                      filter.order == job_order::latest;
  const bool filtered = filter.when || filter.owner || filter.text || filter.language ||
                        filter.min_mpi_percent || filter.min_ranks || filter.max_ranks ||
                        filter.account || filter.partition || filter.nonzero_exit;
  const bool chooses = filtered && (!by_end || filter.text);
  const std::int64_t bound = chooses ? std::max(cap, db.list_threshold()) : cap;
  page.matches = bound > 0 ? count_up_to(db, filter, bound, terms) : 0;
  list_plan plan = list_plan::planner;
  // A deep page walks (offset + limit) / density entries of the order's index, more still
  // when the matches sort late (the busiest user's page 100 by CPU time: 300 ms on
  // PostgreSQL); one owner's or program's jobs, read from their index, cost the same on any
  // page.
  const bool deep = filter.offset + filter.limit > 1000 && (filter.owner || filter.text);
  // MPI time and exit code have no index to walk: a filter's index, then sort (the whole table
  // when unfiltered).
  const bool no_order_index =
      filter.order == job_order::mpi_time_desc || filter.order == job_order::exit_code_desc;
  if (chooses)
    plan = page.matches < db.list_threshold() || deep || no_order_index ? list_plan::by_filter
                                                                        : list_plan::by_order;
  // The page's job ids first, from an index that holds every filter and sort column (no row
  // is read for the rows skipped or filtered out, unless a text is searched), then their rows.
  std::vector<store::param> params;
  std::string sql =
      "SELECT " + job_columns() + " FROM jobs WHERE job_id IN (SELECT job_id FROM jobs" +
      where_clause(filter, params, terms, plan, filter.order) + order_clause(filter.order, plan);
  params.push_back(filter.limit);
  sql += " LIMIT $" + std::to_string(params.size());
  params.push_back(filter.offset);
  sql += " OFFSET $" + std::to_string(params.size()) + ")" + order_clause(filter.order);
  db.query(sql, params, [&](const store::row& r) { page.rows.push_back(read_job(r)); });
  page.matches = std::min(page.matches, cap);
  return page;
}

std::int64_t count_jobs(store& db, const job_filter& filter) {
  std::vector<store::param> params;
  const std::string sql =
      "SELECT COUNT(*) FROM jobs" + where_clause(filter, params, search(db, filter));
  std::int64_t n = 0;
  db.query(sql, params, [&](const store::row& r) { n = r.i64(0); });
  return n;
}

} // namespace strata::site
