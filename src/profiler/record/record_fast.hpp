// A faster reader of job records for bulk work (`strata site ingest` reads every record of a
// site): simdjson's DOM instead of nlohmann's, the same rules (record_reader.hpp). It returns
// what parse_record returns for every input (fuzz/record_fuzz.cpp checks): whatever it does
// not accept itself (a syntax error, a Unicode escape, a repeated key, a record that breaks a
// rule) is handed to parse_record, so messages and edge cases stay those of the reference
// reader. Kept out of strata_record so that the profile module, which runs inside MPI jobs,
// needs no simdjson.
#pragma once

#include "profiler/record/record.hpp"

#include <optional>
#include <string_view>
#include <vector>

namespace strata::record {

// Never throws; thread-safe (one simdjson parser per thread).
parse_result parse_record_fast(std::string_view json_text);

// For bulk work that needs the MPI_T control variables only as text (the site's index of
// them): parse_record_fast's result, except that the record's mpi_t cvars map may be left
// empty (it is when simdjson read the text); `cvars` holds them in name order as views, valid
// until this thread's next call here and while `parsed` lives where it is (they point into
// this thread's parser, or into the record's own map when parse_record read the text).
struct lean_parse_result {
  parse_result parsed;
  std::vector<cvar_view> cvars;
};
lean_parse_result parse_record_lean(std::string_view json_text);

// The simdjson path alone: nullopt where parse_record_fast hands the text to parse_record (for
// tests and the fuzz target: what it accepts must equal parse_record's record).
std::optional<job_record> read_record_simdjson(std::string_view json_text);
// The same for parse_record_lean: the record without its control variables, and those as
// views (empty when it returns nullopt).
std::optional<job_record> read_record_simdjson_lean(std::string_view json_text,
                                                    std::vector<cvar_view>& cvars);

} // namespace strata::record
