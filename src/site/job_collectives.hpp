// The collectives of each job by communicator in the site store, from its record's
// `communication.collectives` (docs/job-record.md): schema version 16, table job_collectives (a
// row per communicator, numbered heaviest first, with its members as world-rank runs and the
// balance of the bytes its members sent), job_collective_members (each member of the
// communicators the record lists them for) and job_collectives_elsewhere (what the record left
// out or could not attribute). The web interface's job page shows them.
#pragma once

#include "profiler/record/record.hpp"
#include "site/stored_job.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace strata::site {

class store;
struct insert_result;

// The rows the store keeps of a record's section, in the record's order (heaviest first).
job_collective_rows collective_rows_of(const record::collectives_section& section);

// Inside store::insert's transaction: the new jobs' collectives.
void add_job_collectives(store& db, const std::vector<stored_job>& jobs, const insert_result& r);

// What the store holds of one job's collectives, heaviest first. Absent: none stored (the record
// had no collectives, or the job was stored before the store kept them).
std::optional<job_collective_rows> collectives_of(store& db, std::int64_t job_id);

} // namespace strata::site
