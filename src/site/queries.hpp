// The reports' grouped queries over a period: whole UTC days from the day tables
// (site/rollups.hpp), the partial days at the period's ends from the job rows; the two are
// tested to agree. Sums are done in SQL, the same text on both backends.
#pragma once

#include "site/period.hpp"
#include "site/rollups.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace strata::site {

class store;

// Owners with jobs in the period, sorted.
std::vector<std::string> owners(store& db, const period& when);
job_totals totals(store& db, const period& when, const std::optional<std::string>& owner);
// `with_critical` false leaves critical_jobs 0 and reads no job rows for whole days.
std::vector<job_class_row> job_classes(store& db, const period& when, double critical_mpi_percent,
                                       const std::optional<std::string>& owner,
                                       bool with_critical = true);
// The site's sums per language, size class (size_class_of, in `ranks`) and CPU-time class,
// owner left empty and critical_jobs 0; and per owner. Whole days from day_shapes and
// day_owners, a few hundred rows a day.
std::vector<job_class_row> job_shapes(store& db, const period& when);
std::map<std::string, job_totals> owner_totals(store& db, const period& when);

// Per Slurm account (`by_partition` false) or partition of the jobs in the period ("" for jobs
// without one), from the jobs themselves.
std::map<std::string, job_totals> slurm_totals(store& db, const period& when, bool by_partition);
// Jobs with mpi_percent above `threshold` in the period: from day_mpi for whole days when the
// threshold is a whole number from 0 to 100, from the job rows otherwise.
std::int64_t count_critical(store& db, const period& when, double threshold);
// Per owner and routine; `by_owner` false sums over all owners (owner left empty).
std::vector<owner_routine_row> routine_sums(store& db, const period& when,
                                            const std::optional<std::string>& owner, bool by_owner);
std::vector<owner_week_row> owner_weeks(store& db, const period& when,
                                        const std::optional<std::string>& owner);

} // namespace strata::site
