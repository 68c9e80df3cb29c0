// Where each thread of one rank is with respect to MPI, and the file that holds it
// (strata.hang-state/3): one writer (the rank itself, updating fixed-size slots in place in a
// shared mapping) and one reader (`strata hang`, possibly while the writer runs). Each slot has a
// sequence counter (a seqlock): odd while the writer changes it, so a reader that sees it odd or
// changed across its copy retries, and a rank stuck inside MPI never has to cooperate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::hang {

// Peers and roots are ranks of the application's world; these stand for MPI's special values.
inline constexpr int32_t no_peer = -1;
inline constexpr int32_t any_source = -2;
inline constexpr int32_t proc_null = -3;
inline constexpr int32_t any_tag = -1;

enum class thread_phase : uint8_t {
  unused = 0,      // no thread has this slot
  not_started = 1, // before its first MPI call
  in_mpi = 2,      // inside `routine` since `since_ns`
  outside_mpi = 3, // computing; `routine` is its last call, completed at `since_ns`
  finalized = 4,   // after MPI_Finalize
};

enum class language : uint8_t { unknown = 0, c = 1, cxx = 2, fortran = 3, python = 4 };

// A communicator as its members in world ranks: member i is first + i * stride when stride is not
// 0 (the world, its duplicates, contiguous or strided splits); stride 0 means only the id and size
// are known.
struct communicator {
  uint64_t id = 0;
  uint32_t size = 0;
  int32_t first = 0;
  int32_t stride = 0;
  [[nodiscard]] bool members_known() const { return stride != 0 || size == 1; }
  [[nodiscard]] int32_t member(uint32_t i) const {
    return first + static_cast<int32_t>(i) * stride;
  }
  [[nodiscard]] bool contains(int32_t world_rank) const;
  bool operator==(const communicator&) const = default;
};

enum class op_kind : uint8_t {
  send = 1,
  recv = 2,
  collective = 3,   // a nonblocking collective (MPI_Ibarrier, ...) on `comm`
  matched_recv = 4, // MPI_Imrecv: the receive of a message a probe already matched
};

// The collectives a pending operation of kind `collective` may be, in the order of
// routines::collective_op (1 barrier ... 22 neighbor_alltoallw): "MPI_I" and this name.
std::string_view collective_name(uint16_t collective); // "barrier"; "" for an unknown one
inline constexpr uint16_t collective_count = 22;

// A nonblocking operation posted and not yet completed: the message queue a debugger shows.
struct pending_op {
  op_kind kind = op_kind::send;
  bool waited = false;    // the thread's current call (a Wait, Waitall, ...) waits for it
  int32_t peer = no_peer; // a collective's root, else no_peer
  int32_t tag = 0;
  uint64_t bytes = 0;
  communicator comm;
  uint16_t collective = 0; // kind collective: which (collective_name), else 0
  bool operator==(const pending_op&) const = default;
};

struct thread_state {
  thread_phase phase = thread_phase::unused;
  language lang = language::unknown;
  bool torn = false; // the writer was changing it on every try (or died doing so)
  uint64_t os_thread = 0;
  std::string routine; // e.g. "MPI_Recv"
  std::string file;    // the call site in the user's code (a Python program's: the .py line)
  uint32_t line = 0;
  std::string function;
  // When the call site above is a Python line: where the compiled code that made the MPI call
  // (mpi4py's extension module) called it; else empty.
  std::string native_file;
  uint32_t native_line = 0;
  std::string native_function;
  communicator comm;
  int32_t peer = no_peer;  // destination, source or root
  int32_t peer2 = no_peer; // the source of a Sendrecv
  int32_t tag = 0;
  int32_t tag2 = 0; // the receive tag of a Sendrecv
  uint64_t bytes = 0;
  uint64_t since_ns = 0; // CLOCK_REALTIME
  uint64_t calls_completed = 0;
  uint32_t pending_total = 0; // may exceed pending.size(): the slot holds the first few
  // Requests its current call (a Wait, Waitall, ...) waits for, listed or not (0: not a wait,
  // or an older writer); those listed come first.
  uint32_t waited_total = 0;
  std::vector<pending_op> pending;
  bool operator==(const thread_state&) const = default;
};

struct rank_state {
  int32_t world_rank = 0;
  int32_t world_size = 0;
  int64_t pid = 0;
  std::string host;
  uint64_t observed_ns = 0; // when the writer last wrote anything (a heartbeat where it has one)
  // Threads that made MPI calls but have no slot (more than the file's slots, or than libstrata
  // lists): their calls and requests are not in the state.
  uint32_t threads_not_described = 0;
  std::vector<thread_state> threads;
  std::string source; // the file it came from, for messages
};

inline constexpr uint32_t state_version = 3;
inline constexpr size_t max_listed_pending = 6;
// Larger worlds than any machine runs are a damaged header (the analysis sizes tables by it).
inline constexpr int32_t max_world_size = 1 << 24;
inline constexpr size_t max_routine = 32, max_file = 96, max_function = 48, max_host = 12;

// One problem with a state file, in one line naming it.
struct state_read_result {
  std::optional<rank_state> state;
  std::string error;
  [[nodiscard]] bool ok() const { return state.has_value(); }
};

// Reads a state from the bytes of a file (a copy: a slot caught mid-update is marked torn).
state_read_result parse_state(std::string_view bytes, const std::string& source = "");

// Reads a state file, copying each slot again while the writer is changing it.
state_read_result read_state_file(const std::string& path);

// The bytes of a file holding `state` (tests and tools; the profile uses state_writer).
std::string encode_state(const rank_state& state);

// The writer: the file mapped shared, one slot per thread, each update in place under its slot's
// sequence counter. Updates are a few stores; nothing allocates after open.
class state_writer {
public:
  // Creates (or replaces) `path` with `slots` unused slots; nullopt with `error` set on failure.
  static std::optional<state_writer> open(const std::string& path, int32_t world_rank,
                                          int32_t world_size, uint32_t slots, std::string& error);
  state_writer(state_writer&& other) noexcept;
  state_writer& operator=(state_writer&&) = delete;
  state_writer(const state_writer&) = delete;
  ~state_writer();

  // Replaces a slot's whole state (entering or leaving a call, posting or completing requests).
  void write(uint32_t slot, const thread_state& state);
  // Cheaper: only the phase, routine id fields kept, time and completed-call count change.
  void leave_call(uint32_t slot, uint64_t now_ns);
  // The heartbeat: "this process was alive at now_ns" (a rank computing or stuck still says so).
  void observe(uint64_t now_ns);
  // The threads of the rank that have no slot (rank_state::threads_not_described).
  void set_threads_not_described(uint32_t count);
  [[nodiscard]] uint32_t slots() const { return slots_; }

private:
  state_writer(void* map, size_t bytes, uint32_t slots) : map_(map), bytes_(bytes), slots_(slots) {}
  void* map_ = nullptr;
  size_t bytes_ = 0;
  uint32_t slots_ = 0;
};

// The current CLOCK_REALTIME in ns, as the writer stamps it.
uint64_t realtime_ns();

} // namespace strata::hang
