// Files that are either whole or absent: a reader (the site ingest, `strata report`, a user's
// editor) never sees half of one, even when the writer dies. No MPI here.
#pragma once

#include <string>
#include <sys/types.h>

namespace strata::common {

// Writes `text` to a temporary file next to `path` (created with `mode`, less the umask) and
// renames it over `path`. Returns an error message, empty on success.
std::string write_atomically(const std::string& path, const std::string& text, mode_t mode = 0640);

// Creates the directory and its parents (0700) if needed; true when it is a writable directory
// (else errno says why: ENOTDIR for a file in the way).
bool make_writable_dir(const std::string& dir);

} // namespace strata::common
