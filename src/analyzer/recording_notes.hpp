// What the trace module says of its own recording, in an archive's location properties
// (docs/tracing.md): the events a rank dropped at its size limit and from when, and the calls it
// counted rather than recorded. Every reader of an archive says when it is truncated. No OTF2
// here: the reader hands over each property by name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::analyze {

struct rank_drops {
  uint32_t rank = 0;
  uint64_t events = 0; // dropped at the size limit
  uint64_t after = 0;  // the rank's events after this time are missing (stop policy); 0: unsaid
  uint64_t before = 0; // its events before this time are missing (ring policy); 0: unsaid
};

struct counted_calls {
  uint32_t rank = 0;
  std::string routine; // "MPI_Wtime"
  uint64_t calls = 0;
};

struct recording_notes {
  std::vector<rank_drops> drops;      // the ranks that dropped events, in rank order
  std::vector<counted_calls> counted; // by rank, then routine

  // One unsigned location property of `rank`; false when it is none of these.
  bool note(uint32_t rank, const std::string& name, uint64_t value);
  // Rank order, and only the ranks that dropped something; after the last note.
  void finish();
  [[nodiscard]] uint64_t dropped() const;
};

// One line saying that the trace is truncated: how many events, which ranks from when (seconds
// from `offset`, at `resolution` ticks per second); empty when nothing was dropped.
std::string truncation_line(const recording_notes& notes, uint64_t offset, uint64_t resolution);

} // namespace strata::analyze
