// A module's declared options (include/strata/module.h, strata_module_options_v1): the one
// place where an option's value is found (the stack's argument, then STRATA_<MODULE>_<KEY> and
// the option's older environment names, then its default) and checked against its type, and the
// one parser of each type, which modules use to read the values they get. No MPI.
#pragma once

#include "config/config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::config {

// One declared option, as the module declares it.
struct option_decl {
  std::string key;
  std::string type; // int, uint, double, bool, string, list, size, duration, enum:a|b
  std::optional<std::string> default_value;
  std::string help;
  std::vector<std::string> env; // older environment names, honoured after STRATA_<MODULE>_<KEY>
};

struct resolved_options {
  std::vector<std::pair<std::string, std::string>> values; // declaration order, set ones only
  std::string error; // one line naming the module, the option and the problem; empty when fine
  bool ok() const { return error.empty(); }
};

// STRATA_<MODULE>_<KEY>: upper case, every other character than a letter or digit an '_'.
std::string option_variable(std::string_view module, std::string_view key);

// The values a module gets: every given argument must be declared, every value (given, from the
// environment or the default) must be of its option's type.
resolved_options resolve_options(std::string_view module, const std::vector<option_decl>& declared,
                                 const std::vector<std::pair<std::string, std::string>>& given,
                                 const getenv_fn& getenv);

// Why `value` is not of `type` ("" when it is).
std::string type_problem(std::string_view type, std::string_view value);

// The parsers, one per type; nullopt for text that is not of the type.
std::optional<int64_t> parse_int(std::string_view text);
std::optional<uint64_t> parse_uint(std::string_view text);
std::optional<double> parse_double(std::string_view text);
std::optional<bool> parse_bool(std::string_view text); // 1/0, true/false, yes/no, on/off
// Bytes with an optional binary suffix: 512, 64K, 16M, 2G (K = 1024).
std::optional<uint64_t> parse_size(std::string_view text);
// Seconds with an optional unit: 2.5, 10s, 250ms, 40us, 100ns, 5m, 1h.
std::optional<double> parse_duration(std::string_view text);

} // namespace strata::config
