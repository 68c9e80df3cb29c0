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

namespace strata::record {

// Never throws; thread-safe (one simdjson parser per thread).
parse_result parse_record_fast(std::string_view json_text);

// The simdjson path alone: nullopt where parse_record_fast hands the text to parse_record (for
// tests and the fuzz target: what it accepts must equal parse_record's record).
std::optional<job_record> read_record_simdjson(std::string_view json_text);

} // namespace strata::record
