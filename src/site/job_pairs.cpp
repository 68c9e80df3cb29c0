#include "site/job_pairs.hpp"

#include "site/store.hpp"

#include <algorithm>
#include <utility>

namespace strata::site {

namespace {

const std::vector<std::string> pair_columns = {"job_id",  "kind",     "from_rank",
                                               "to_rank", "messages", "bytes"};
const std::vector<std::string> unlisted_columns = {"job_id", "pairs", "messages", "bytes"};

} // namespace

job_pair_rows pair_rows_of(const record::communication_section& section) {
  job_pair_rows out;
  for (const auto& [kind, pairs] : section.by_kind)
    for (const record::message_pair& p : pairs)
      out.rows.push_back({kind, stored_count(p.from), stored_count(p.to), stored_count(p.messages),
                          stored_count(p.bytes)});
  if (section.unlisted) {
    out.unlisted_pairs = stored_count(section.unlisted->pairs);
    out.unlisted_messages = stored_count(section.unlisted->messages);
    out.unlisted_bytes = stored_count(section.unlisted->bytes);
  }
  return out;
}

void add_job_pairs(store& db, const std::vector<stored_job>& jobs, const insert_result& r) {
  std::vector<std::vector<store::param>> rows, unlisted;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!r.was_new[i] || !jobs[i].pairs)
      continue;
    const job_pair_rows& p = *jobs[i].pairs;
    for (const pair_row& row : p.rows)
      rows.push_back({r.job_ids[i], row.kind, row.from, row.to, row.messages, row.bytes});
    if (p.unlisted_pairs != 0)
      unlisted.push_back({r.job_ids[i], p.unlisted_pairs, p.unlisted_messages, p.unlisted_bytes});
  }
  db.append("job_pairs", pair_columns, rows);
  db.append("job_unlisted_pairs", unlisted_columns, unlisted);
}

std::optional<job_partners> partners_of(store& db, std::int64_t job_id) {
  std::map<std::pair<std::int64_t, std::int64_t>, partner_pair> by_ranks;
  db.query("SELECT kind, from_rank, to_rank, messages, bytes FROM job_pairs WHERE job_id = $1",
           {job_id}, [&](const store::row& row) {
             partner_pair& p = by_ranks[{row.i64(1), row.i64(2)}];
             p.from = row.i64(1);
             p.to = row.i64(2);
             const std::int64_t messages = row.i64(3), bytes = row.i64(4);
             p.messages += messages;
             p.bytes += bytes;
             p.messages_by_kind[row.text(0)] += messages;
             p.bytes_by_kind[row.text(0)] += bytes;
           });
  job_partners out;
  db.query("SELECT pairs, messages, bytes FROM job_unlisted_pairs WHERE job_id = $1", {job_id},
           [&](const store::row& row) {
             out.unlisted_pairs = row.i64(0);
             out.unlisted_messages = row.i64(1);
             out.unlisted_bytes = row.i64(2);
           });
  if (by_ranks.empty() && out.unlisted_pairs == 0)
    return std::nullopt;
  for (auto& [ranks, p] : by_ranks)
    out.pairs.push_back(std::move(p));
  std::sort(out.pairs.begin(), out.pairs.end(), [](const partner_pair& a, const partner_pair& b) {
    if (a.bytes != b.bytes)
      return a.bytes > b.bytes;
    if (a.messages != b.messages)
      return a.messages > b.messages;
    return a.from != b.from ? a.from < b.from : a.to < b.to;
  });
  return out;
}

bool has_pairs(store& db, std::int64_t job_id) {
  bool found = false;
  db.query("SELECT 1 FROM job_pairs WHERE job_id = $1 LIMIT 1", {job_id},
           [&](const store::row&) { found = true; });
  return found;
}

} // namespace strata::site
