// A set of MPI control variables as the site store keeps it (site/mpi_t_index.hpp): its text
// is its identity, written and read back here only. One line per variable in name order: its
// name, value and whether the environment set it, apart by ASCII unit separators, each line
// ended by an ASCII record separator; a separator inside a name or value (no MPI has one) is
// replaced by '?'.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata::site {

// One control variable of a set.
struct setting {
  std::string name, value;
  bool from_environment = false; // the job's environment set it
  bool operator==(const setting&) const = default;
};

std::string settings_text(const std::vector<setting>& settings);
// One variable's line, appended to `out`: settings_text is these lines in name order (a caller
// whose variables are already in name order writes them with this, without copies).
void append_setting_line(std::string& out, std::string_view name, std::string_view value,
                         bool from_environment);
// The text back as settings; a line without its two separators is left out.
std::vector<setting> settings_of_text(const std::string& text);

} // namespace strata::site
