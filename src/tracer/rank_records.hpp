// One rank's records on their way into the archive: first what they refer to (the rank's local
// definitions, for the unification over ranks), then, once the job's ids are known, the records
// themselves as OTF2 events of the rank's location. No MPI.
#pragma once

#include "tracer/buffer.hpp"
#include "tracer/clock.hpp"
#include "tracer/otf2_writer.hpp"
#include "tracer/routine_class.hpp"
#include "tracer/unify.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace strata::trace {

// What a rank's records refer to, by local index, and the raw -> local index maps.
struct local_index {
  local_defs defs;
  // The rank's communicator c -> its index in defs.comms; -1 for c = 0 and for a communicator
  // with a process outside the application's world (its world rank negative: another tool's
  // communicator of every process, an intercommunicator to spawned processes), which the
  // archive cannot name: its calls go without message or collective records.
  std::vector<int32_t> def_of_comm;
  std::vector<int32_t> mpi_region_of_fid;                // -1 = unused
  std::unordered_map<uint64_t, int32_t> site_of_address; // -1 = unknown place
};

// What the rank knows besides its records. `comm_members[c]` holds the world ranks of the rank's
// communicator c (c = 0 is "none", its list unused; a process outside the application's world
// is a negative rank); `resolve` turns return addresses into
// source places, one per address in order (line 0: unknown).
struct rank_context {
  std::string host;
  std::vector<std::string> function_names; // by MPI function id
  std::vector<std::string> region_names;   // user regions by index
  std::vector<std::vector<int>> comm_members;
  std::function<std::vector<source_site>(const std::vector<uint64_t>&)> resolve;
};

local_index collect_local(const event_buffer& records, const rank_context& rank);

// Figures of one rank's part of the archive, gathered on rank 0 with one MPI_Gather of six
// 64-bit words.
struct rank_figures {
  uint64_t events = 0;
  uint64_t dropped = 0;
  uint64_t first = 0; // corrected time of the first event written
  uint64_t last = 0;
  int64_t offset_init = 0;
  int64_t offset_final = 0;
};
static_assert(sizeof(rank_figures) == 6 * sizeof(uint64_t));

// Writes one rank's records as OTF2 events with the job's ids, timestamps corrected onto rank 0's
// clock and never decreasing. A run of empty polls is one Enter/Leave pair (from the first poll's
// enter to the last one's leave; runs of a loop that alternates between polls are laid back to
// back), its Enter carrying the number of polls and the time inside them (when more than one); a
// cancelled request's completion is MpiRequestCancelled. Records whose partner fell out of a ring
// buffer (a completion without its call or start, a region leave without its enter) are left out,
// and regions still open at the end close at the last event, so the location nests.
class record_writer {
public:
  record_writer(location_writer& out, const std::vector<fn_info>& functions,
                const std::vector<std::vector<int>>& comm_members, const clock_line& clock,
                const local_index& local, const rank_map& map);

  void write(const record& r);
  // Closes what is still open.
  void finish();

  // Every record of the buffer (MPI calls that entered before `window_begin` skipped: MPI_Init is
  // recorded before the window is known), then finish(). Fills events, first and last.
  void write_all(const event_buffer& records, uint64_t window_begin, rank_figures& figures);

  [[nodiscard]] uint64_t last_time() const { return last_time_; }

private:
  uint64_t at(uint64_t t);
  uint32_t comm_rank(uint32_t comm, int world);
  [[nodiscard]] uint32_t global_comm(uint32_t comm) const;
  [[nodiscard]] bool is_rank_of(uint32_t comm, int32_t rank) const;
  [[nodiscard]] uint32_t site_of(uint64_t address) const;
  void flush_leave();
  [[nodiscard]] bool started(uint32_t request) const;
  void start(uint32_t request);
  void write_call(const record& r);
  void write_one_sided(const fn_info& f, uint64_t t, uint32_t target, const record& r);

  location_writer& out_;
  const std::vector<fn_info>& functions_;
  const std::vector<std::vector<int>>& comm_members_;
  const clock_line& clock_;
  const local_index& local_;
  const rank_map& map_;
  std::vector<std::unordered_map<int, uint32_t>> comm_rank_of_world_; // by local comm index
  std::vector<uint32_t> open_regions_;                                // global ids
  bool pending_leave_ = false;
  uint64_t pending_time_ = 0;
  uint32_t pending_region_ = 0;
  std::vector<bool> request_started_; // requests whose Isend/Irecv is in the archive
  uint64_t last_time_ = 0;
};

} // namespace strata::trace
