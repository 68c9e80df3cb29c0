// Reads an OTF2 anchor file once in a process of its own before the reader opens it: the OTF2
// library (3.0.2) frees memory it never allocated on some damaged anchor files (a property
// count out of range), which no error code reports and which would corrupt the analyzer's heap.
// The process is the library's own anchor printer (`otf2-print -I`, Debian's otf2-tools), started
// fresh so that what the library does with the file does not depend on our heap; where it is
// not installed, nothing is probed.
//
// The verdict is remembered in this process by the anchor file's bytes: every reader of the same
// anchor (the XML export opens three) starts the printer once, and a file rewritten since is
// probed again, also when its size and modification time are those of before (a damaged copy
// written over a good one within the file system's timestamp tick).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace strata::analyze {

// Empty when the printer read the anchor and ended (with or without an error the library
// reported: the reader then says it), or could not be started; else why the file is damaged.
std::string probe_anchor(const std::string& anchor);

// The same, with the bytes the verdict belongs to (nullopt when the file could not be read, or
// changed while the printer read it).
struct anchor_check {
  std::optional<std::string> bytes;
  std::string verdict;
};
anchor_check check_anchor(const std::string& anchor);

// The anchor file's bytes, by which verdicts are remembered; nullopt when it cannot be read
// (then probe_anchor probes every time).
std::optional<std::string> read_anchor_bytes(const std::string& anchor);

// A verdict another process reached on these bytes (the analysis over MPI: one process probes,
// the others are told), remembered as if probed here.
void remember_anchor_verdict(const std::string& bytes, const std::string& verdict);

// How many times this process started the printer (for the tests).
uint64_t anchor_probes_started();

} // namespace strata::analyze
