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
// Lines of a caller whose variables are in name order, appended to `out` as settings_text
// writes them: each(line) calls line(name, value, from_environment) once per variable, and may
// be called twice. The lines are appended as they are, then their separators counted: only if
// a name or value held one (no MPI's does) are they written again line by line, replaced.
template <typename Each> void append_setting_lines(std::string& out, Each each);
// Whether `lines` lines of settings text hold no separator but their own.
bool only_own_separators(std::string_view lines_text, size_t lines);

// The text back as settings; a line without its two separators is left out.
std::vector<setting> settings_of_text(const std::string& text);

inline constexpr char setting_field_separator = '\x1f';  // ASCII unit separator
inline constexpr char setting_record_separator = '\x1e'; // ASCII record separator

template <typename Each> void append_setting_lines(std::string& out, Each each) {
  const size_t start = out.size();
  size_t lines = 0;
  each([&](std::string_view name, std::string_view value, bool from_environment) {
    out.append(name);
    out += setting_field_separator;
    out.append(value);
    const char end[] = {setting_field_separator, from_environment ? '1' : '0',
                        setting_record_separator};
    out.append(end, sizeof end);
    ++lines;
  });
  if (only_own_separators(std::string_view(out).substr(start), lines))
    return;
  out.resize(start);
  each([&](std::string_view name, std::string_view value, bool from_environment) {
    append_setting_line(out, name, value, from_environment);
  });
}

} // namespace strata::site
