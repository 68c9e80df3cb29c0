#include "site/job_collectives.hpp"

#include "site/store.hpp"

#include <string>

namespace strata::site {

namespace {

const std::vector<std::string> communicator_columns = {
    "job_id",         "communicator", "members",   "size",           "members_reported",
    "calls",          "bytes",        "calls_min", "calls_max",      "bytes_min",
    "bytes_min_rank", "bytes_mean",   "bytes_max", "bytes_max_rank", "imbalance"};
const std::vector<std::string> member_columns = {"job_id", "communicator", "member_rank", "calls",
                                                 "bytes"};
const std::vector<std::string> elsewhere_columns = {"job_id", "unlisted_calls", "unlisted_bytes",
                                                    "unattributed_calls", "unattributed_bytes"};

} // namespace

job_collective_rows collective_rows_of(const record::collectives_section& section) {
  job_collective_rows out;
  for (const record::communicator_collectives& c : section.communicators) {
    communicator_row row;
    row.members = c.members;
    row.size = stored_count(c.size);
    row.members_reported = stored_count(c.members_reported);
    row.calls = stored_count(c.calls);
    row.bytes = stored_count(c.bytes);
    row.calls_min = stored_count(c.calls_min);
    row.calls_max = stored_count(c.calls_max);
    const record::member_bytes_spread& b = c.bytes_per_member;
    row.bytes_min = stored_count(b.min);
    row.bytes_min_rank = stored_count(b.min_rank);
    row.bytes_max = stored_count(b.max);
    row.bytes_max_rank = stored_count(b.max_rank);
    row.bytes_mean = b.mean;
    // As the report's "max / mean": how far the heaviest member is from an even share.
    if (b.mean > 0)
      row.imbalance = static_cast<double>(b.max) / b.mean;
    for (const record::member_collectives& m : c.per_member)
      row.per_member.push_back(
          {stored_count(m.rank), stored_count(m.calls), stored_count(m.bytes)});
    out.communicators.push_back(std::move(row));
  }
  if (section.unlisted) {
    out.unlisted_calls = stored_count(section.unlisted->calls);
    out.unlisted_bytes = stored_count(section.unlisted->bytes);
  }
  if (section.unattributed) {
    out.unattributed_calls = stored_count(section.unattributed->calls);
    out.unattributed_bytes = stored_count(section.unattributed->bytes);
  }
  return out;
}

void add_job_collectives(store& db, const std::vector<stored_job>& jobs, const insert_result& r) {
  std::vector<std::vector<store::param>> communicators, members, elsewhere;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!r.was_new[i] || !jobs[i].collectives)
      continue;
    const job_collective_rows& c = *jobs[i].collectives;
    const std::int64_t job = r.job_ids[i];
    for (size_t n = 0; n < c.communicators.size(); ++n) {
      const communicator_row& x = c.communicators[n];
      const auto number = static_cast<std::int64_t>(n);
      communicators.push_back({job, number, x.members, x.size, x.members_reported, x.calls, x.bytes,
                               x.calls_min, x.calls_max, x.bytes_min, x.bytes_min_rank,
                               x.bytes_mean, x.bytes_max, x.bytes_max_rank,
                               x.imbalance ? store::param(*x.imbalance) : store::param()});
      for (const collective_member_row& m : x.per_member)
        members.push_back({job, number, m.rank, m.calls, m.bytes});
    }
    if (c.unlisted_calls != 0 || c.unlisted_bytes != 0 || c.unattributed_calls != 0 ||
        c.unattributed_bytes != 0)
      elsewhere.push_back(
          {job, c.unlisted_calls, c.unlisted_bytes, c.unattributed_calls, c.unattributed_bytes});
  }
  db.append("job_collectives", communicator_columns, communicators);
  db.append("job_collective_members", member_columns, members);
  db.append("job_collectives_elsewhere", elsewhere_columns, elsewhere);
}

std::optional<job_collective_rows> collectives_of(store& db, std::int64_t job_id) {
  job_collective_rows out;
  db.query("SELECT members, size, members_reported, calls, bytes, calls_min, calls_max, "
           "bytes_min, bytes_min_rank, bytes_mean, bytes_max, bytes_max_rank, imbalance FROM "
           "job_collectives WHERE job_id = $1 ORDER BY communicator",
           {job_id}, [&](const store::row& row) {
             communicator_row c;
             c.members = row.text(0);
             c.size = row.i64(1);
             c.members_reported = row.i64(2);
             c.calls = row.i64(3);
             c.bytes = row.i64(4);
             c.calls_min = row.i64(5);
             c.calls_max = row.i64(6);
             c.bytes_min = row.i64(7);
             c.bytes_min_rank = row.i64(8);
             c.bytes_mean = row.f64(9);
             c.bytes_max = row.i64(10);
             c.bytes_max_rank = row.i64(11);
             if (!row.is_null(12))
               c.imbalance = row.f64(12);
             out.communicators.push_back(std::move(c));
           });
  db.query("SELECT communicator, member_rank, calls, bytes FROM job_collective_members WHERE "
           "job_id = $1 ORDER BY communicator, member_rank",
           {job_id}, [&](const store::row& row) {
             const auto n = static_cast<size_t>(row.i64(0));
             if (n < out.communicators.size())
               out.communicators[n].per_member.push_back({row.i64(1), row.i64(2), row.i64(3)});
           });
  bool elsewhere = false;
  db.query("SELECT unlisted_calls, unlisted_bytes, unattributed_calls, unattributed_bytes FROM "
           "job_collectives_elsewhere WHERE job_id = $1",
           {job_id}, [&](const store::row& row) {
             elsewhere = true;
             out.unlisted_calls = row.i64(0);
             out.unlisted_bytes = row.i64(1);
             out.unattributed_calls = row.i64(2);
             out.unattributed_bytes = row.i64(3);
           });
  if (out.communicators.empty() && !elsewhere)
    return std::nullopt;
  return out;
}

} // namespace strata::site
