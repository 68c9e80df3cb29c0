// The per-rank profile file: a file mapping the profiler counts into directly, so whatever a
// rank has counted survives its death (SIGKILL included: the pages belong to the file). Fixed
// layout, no pointers; read back by `strata recover` and the site ingest. No MPI here.
#pragma once

#include "common/timed_slot.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace strata::profiler {

inline constexpr char rank_file_magic[8] = {'S', 'T', 'R', 'P', 'R', 'O', 'F', '1'};
inline constexpr uint32_t rank_file_version = 7;
inline constexpr uint32_t oldest_rank_file_version = 6;  // read too: 7 added the thread arrays
inline constexpr int size_bins = STRATA_TIMED_SIZE_BINS; // bin 0: 0 bytes; k: [2^(k-1), 2^k)
inline constexpr int comm_bins = STRATA_TIMED_COMM_BINS; // bin k: sizes in [2^k, 2^(k+1))
inline constexpr int max_counters = 8;
inline constexpr uint64_t max_thread_arrays = 64; // what a reader accepts
inline constexpr int name_length = 48;

enum class job_status : int32_t { running = 0, finalized = 1, aborted = 2, signal = 3, exited = 4 };
const char* status_name(job_status s);

// One MPI function on one rank. Written on every call (relaxed atomics when threads share it),
// by the profile or by the core (strata_module_timed_counts_v1): the module ABI's slot, whose
// layout is the file's.
using routine_slot = strata_timed_slot;
static_assert(sizeof(routine_slot) == sizeof(uint64_t) * (7 + size_bins + comm_bins));

// A slot before its first call: nothing counted, no minimum yet (UINT64_MAX reads as none).
inline constexpr routine_slot empty_routine_slot = [] {
  routine_slot slot{};
  slot.min_ns = UINT64_MAX;
  return slot;
}();

// One (MPI function, call site) pair on one rank (STRATA_PROFILE_CALLSITES=1). The key packs
// the return address (user space: 47 bits) with the function id + 1 in the top 16 bits, so one
// 64-bit compare-and-swap claims a slot.
struct callsite_slot {
  uint64_t key; // 0 = free
  uint64_t calls;
  uint64_t time_ns;
  uint64_t bytes;
  uint64_t wasted_ns; // time over what the machine model says the call should take
};
inline uint64_t callsite_key(uint64_t address, int function) {
  return (address & ((uint64_t{1} << 48) - 1)) | (static_cast<uint64_t>(function + 1) << 48);
}
inline uint64_t callsite_address(uint64_t key) {
  return key & ((uint64_t{1} << 48) - 1);
}
inline int callsite_function(uint64_t key) {
  return static_cast<int>(key >> 48) - 1;
}

struct rank_header {
  char magic[8];
  uint32_t version;
  uint32_t header_size;
  uint32_t slot_size;
  uint32_t function_count;
  int32_t rank;
  int32_t world_size;
  int32_t status;        // job_status
  int32_t status_detail; // abort code or signal number
  int32_t thread_level;
  int32_t fortran; // the language: 0 C/C++, 1 Fortran, 2 Python (a CPython interpreter ran it)
  int32_t pmpi_intercepted;
  int32_t counter_count;
  uint32_t uid;
  uint32_t pid;
  uint32_t callsite_capacity; // slots after the routine slots; a power of two, or 0
  uint32_t callsites_dropped; // calls not keyed because the table was full
  int64_t start_unix_ns;      // MPI_Init entered
  int64_t end_unix_ns;        // MPI_Finalize entered, or the end observed
  uint64_t init_mono_ns;      // MPI_Init returned (wall time starts)
  uint64_t last_mono_ns;      // the latest call's exit: wall time of a rank that died
  uint64_t final_mono_ns;     // MPI_Finalize entered
  uint64_t overhead_ns;       // the profiler's own time, measured by itself
  uint64_t model_clamped;     // calls whose (p, b) lay outside the machine model's grid
  uint64_t counters_in_mpi[max_counters];
  uint64_t counters_outside_mpi[max_counters];
  char counter_names[max_counters][32];
  char module[16];         // the module counting: "profile" or "overhead"
  char strata_version[32]; // the Strata release counting
  char job_id[128];
  char host[64];
  char user[64];
  char mpi_flavor[16];
  char mpi_library[256];
  char executable[512];
  char argv[1024];        // NUL-separated
  char environment[2048]; // NUL-separated KEY=VALUE, MPI-related variables only
};

// Bin of a message size / communicator size (module.h: the core bins the same way).
inline int size_bin(uint64_t bytes) {
  return strata_size_bin(bytes);
}
inline int comm_bin(uint64_t size) {
  return strata_comm_bin(size);
}
inline uint64_t size_bin_lower_bound(int bin) {
  return bin == 0 ? 0 : uint64_t{1} << (bin - 1);
}

// Layout: header, names, routine slots, call-site slots, then one uint64_t per function: polls
// counted untimed and not yet moved into the routine's slot (calls and time), which a reader
// adds to the slot's calls, charged the slot's mean time per call (uncharged_polls below).
// Version 7 goes on with one uint64_t, the number of thread arrays, and that many arrays of
// routine slots (one per function): under MPI_THREAD_MULTIPLE each thread that calls MPI
// beside another counts into an array of its own; a reader adds them into the routine slots.

// Adds `from` into `into` (calls, times, bytes, histograms; the smaller minimum and larger
// maximum). A slot without calls adds nothing.
void merge_slot(routine_slot& into, const routine_slot& from);

// A rank file mapped for writing; the mapping stays valid until unmap() (or process death).
struct rank_mapping {
  rank_header* header = nullptr;
  routine_slot* slots = nullptr;
  callsite_slot* callsites = nullptr;
  uint64_t* uncharged_polls = nullptr;  // by function id
  routine_slot* thread_slots = nullptr; // thread_arrays arrays of function_count slots
  uint32_t thread_arrays = 0;
  size_t bytes = 0;
  std::string path;
  std::string error;
  bool ok() const { return header != nullptr; }
  void unmap();
};

// Creates PATH (0600) sized for these functions, its blocks reserved, and maps it; names are
// stored in the file so the reader needs no knowledge of the MPI the job used. When the file
// system has no room for it, nothing is left behind and `error` says so.
rank_mapping create_rank_file(const std::string& path, const std::vector<std::string>& names,
                              uint32_t callsite_capacity = 0, uint32_t thread_arrays = 0);

// What a rank counted before its file existed (MPI_Init itself), moved into the file: the facts
// (the file keeps its layout fields), the routine slots and the uncharged polls, by function id.
void move_into_rank_file(rank_mapping& file, const rank_header& facts,
                         const std::vector<routine_slot>& slots,
                         const std::vector<uint64_t>& uncharged_polls);

// A rank file read back (validated; never trusts sizes or strings in the file).
struct rank_data {
  rank_header header{};
  std::vector<std::string> names;
  std::vector<routine_slot> slots;
  std::vector<callsite_slot> callsites;  // addresses of a process that is gone: not resolved
  std::vector<uint64_t> uncharged_polls; // by function id; already added into `slots` here
  uint32_t thread_arrays = 0;            // already added into `slots` here
  std::string path;
};
struct read_result {
  rank_data data;
  std::string error; // empty when fine
};
read_result read_rank_file(const std::string& path);
read_result parse_rank_image(const unsigned char* bytes, size_t size, const std::string& path);

// NUL-separated fields of the header as a list.
std::vector<std::string> split_nul(const char* field, size_t size);
// Bounded copy into a fixed field, always NUL-terminated.
void copy_field(char* field, size_t size, const std::string& value);

} // namespace strata::profiler
