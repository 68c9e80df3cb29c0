// Reads an OTF2 anchor file once in a process of its own before the reader opens it: the OTF2
// library (3.0.2) frees memory it never allocated on some damaged anchor files (a property
// count out of range), which no error code reports and which would corrupt the analyzer's heap.
// The process is the library's own anchor printer (`otf2-print -A`, Debian's otf2-tools),
// started fresh so that what the library does with the file does not depend on our heap; where
// it is not installed, nothing is probed.
#pragma once

#include <string>

namespace strata::analyze {

// Empty when the printer read the anchor and ended (with or without an error the library
// reported: the reader then says it), or could not be started; else why the file is damaged.
std::string probe_anchor(const std::string& anchor);

} // namespace strata::analyze
