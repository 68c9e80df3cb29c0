// Who talks to whom, per job, in the site store: each job's pairs from its record's
// `communication` section, point-to-point and one-sided alike (each of the record's `by_kind`
// kinds, which the store takes as they are named; schema version 14, table job_pairs: one row per
// kind, sender and receiver; job_unlisted_pairs: what a large job's record left out), and what the
// web interface's job page shows of them (its heaviest pairs, and the whole matrix when the
// record had it).
#pragma once

#include "profiler/record/record.hpp"
#include "site/stored_job.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace strata::site {

class store;
struct insert_result;

// The rows the store keeps of a record's section. A figure beyond the store's signed 64-bit
// integers is kept as the largest.
job_pair_rows pair_rows_of(const record::communication_section& section);

// Inside store::insert's transaction: the new jobs' pairs.
void add_job_pairs(store& db, const std::vector<stored_job>& jobs, const insert_result& r);

// One pair of ranks with every kind summed (messages and one-sided operations), and each kind's
// part.
struct partner_pair {
  std::int64_t from = 0, to = 0, messages = 0, bytes = 0;
  std::map<std::string, std::int64_t> bytes_by_kind, messages_by_kind;
};

// What the store holds of one job's pairs, heaviest first (bytes, then messages, then ranks).
struct job_partners {
  std::vector<partner_pair> pairs;
  std::int64_t unlisted_pairs = 0, unlisted_messages = 0, unlisted_bytes = 0;
  bool whole() const { return unlisted_pairs == 0; } // every pair of the job is listed
};

// Absent: the job has no pairs stored (its record counted none, or it was stored before the
// store kept them).
std::optional<job_partners> partners_of(store& db, std::int64_t job_id);

// Whether the store holds any pair of the job (one row read): where it does, the job page draws
// their heat map itself.
bool has_pairs(store& db, std::int64_t job_id);

} // namespace strata::site
