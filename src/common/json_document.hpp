// JSON documents of Strata's file formats (the job record, the machine model): parsed with one
// clear line for every way the text can be wrong, the schema checked before anything else so
// that a newer document is not blamed for a missing field. No MPI here.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace strata::common {

// Text from a document as part of a message: one printable line of bounded length (control
// bytes as \xNN), cut with "..." only at the start of a UTF-8 sequence so it stays valid UTF-8.
std::string printable(std::string_view text, size_t limit = 60);

// How a format names a value in its messages.
using describe_value = std::string (*)(const nlohmann::json& value);

// The parsed document when `text` is a JSON object whose "schema" is `schema`; otherwise
// nullopt and `error` set, e.g. "not JSON: syntax error at byte 12 (line 1, column 12)" or
// "schema is \"strata.job/2\", this Strata reads strata.job/1". Never throws.
std::optional<nlohmann::json> parse_document(std::string_view text, std::string_view schema,
                                             describe_value describe, std::string& error);

} // namespace strata::common
