// strata.hang-state/3: a 64-byte header, then `slot_count` slots of `slot_bytes` bytes, each one
// thread. Little-endian, fixed offsets (docs/hang.md, "The state file"). The writer maps the file
// shared and stores into it; the reader copies a slot, then checks that its sequence counter was
// even and unchanged across the copy.
#include "hang/state.hpp"

#include "gen/routines.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <ctime>

namespace strata::hang {

static_assert(std::endian::native == std::endian::little, "the state file is little-endian");

namespace {

constexpr char state_magic[8] = {'S', 'T', 'R', 'H', 'A', 'N', 'G', '\n'};

struct file_header {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;
  uint32_t slot_bytes;
  uint32_t slot_count;
  int32_t world_rank;
  int32_t world_size;
  int64_t pid;
  uint64_t observed_ns;
  char host[max_host];
  uint32_t threads_not_described;
};
static_assert(sizeof(file_header) == 64);

struct file_comm {
  uint64_t id;
  uint32_t size;
  int32_t first;
  int32_t stride;
  uint32_t reserved;
};
static_assert(sizeof(file_comm) == 24);

struct file_pending {
  uint8_t kind;
  uint8_t waited;
  uint16_t collective;
  int32_t peer;
  int32_t tag;
  uint32_t reserved2;
  uint64_t bytes;
  file_comm comm;
};
static_assert(sizeof(file_pending) == 48);

struct file_slot {
  uint64_t seq; // odd while the writer changes the slot
  uint8_t phase;
  uint8_t lang;
  uint16_t waited_total;
  uint32_t line;
  uint64_t os_thread;
  int32_t peer;
  int32_t peer2;
  int32_t tag;
  int32_t tag2;
  uint64_t bytes;
  uint64_t since_ns;
  uint64_t calls_completed;
  file_comm comm;
  uint32_t pending_total;
  uint32_t pending_listed;
  char routine[max_routine];
  char file[max_file];
  char function[max_function];
  file_pending pending[max_listed_pending];
  // Version 3 on: a Python call site's compiled caller (thread_state::native_file).
  uint32_t native_line;
  uint32_t reserved;
  char native_file[max_file];
  char native_function[max_function];
};
static_assert(sizeof(file_slot) == 712);
// Versions 1 and 2: the slot up to the native call site.
constexpr uint32_t slot_bytes_before_3 = offsetof(file_slot, native_line);
static_assert(slot_bytes_before_3 == 560);
// The offsets docs/hang.md gives.
static_assert(offsetof(file_header, observed_ns) == 40 && offsetof(file_header, host) == 48 &&
              offsetof(file_header, threads_not_described) == 60);
static_assert(offsetof(file_slot, line) == 12 && offsetof(file_slot, peer) == 24 &&
              offsetof(file_slot, since_ns) == 48 && offsetof(file_slot, comm) == 64 &&
              offsetof(file_slot, pending_total) == 88 && offsetof(file_slot, routine) == 96 &&
              offsetof(file_slot, file) == 128 && offsetof(file_slot, function) == 224 &&
              offsetof(file_slot, pending) == 272 && offsetof(file_slot, native_file) == 568 &&
              offsetof(file_slot, native_function) == 664);
static_assert(sizeof(file_slot) % 8 == 0);

// Writes `text` truncated, keeping its end (a path's file name matters more than its root).
template <size_t N> void put_text(char (&field)[N], const std::string& text) {
  std::memset(field, 0, N);
  const size_t keep = std::min(text.size(), N - 1);
  std::memcpy(field, text.data() + (text.size() - keep), keep);
}

template <size_t N> std::optional<std::string> get_text(const char (&field)[N]) {
  const void* end = std::memchr(field, 0, N);
  if (end == nullptr)
    return std::nullopt;
  return std::string(field, static_cast<const char*>(end) - field);
}

file_comm to_file(const communicator& c) {
  return {c.id, c.size, c.first, c.stride, 0};
}
communicator from_file(const file_comm& c) {
  return {c.id, c.size, c.first, c.stride};
}

void fill_slot(file_slot& s, const thread_state& t) {
  s.phase = static_cast<uint8_t>(t.phase);
  s.lang = static_cast<uint8_t>(t.lang);
  s.waited_total = static_cast<uint16_t>(std::min<uint32_t>(t.waited_total, UINT16_MAX));
  s.line = t.line;
  s.os_thread = t.os_thread;
  s.peer = t.peer;
  s.peer2 = t.peer2;
  s.tag = t.tag;
  s.tag2 = t.tag2;
  s.bytes = t.bytes;
  s.since_ns = t.since_ns;
  s.calls_completed = t.calls_completed;
  s.comm = to_file(t.comm);
  const size_t listed = std::min(t.pending.size(), max_listed_pending);
  s.pending_total = std::max<uint32_t>(t.pending_total, static_cast<uint32_t>(listed));
  s.pending_listed = static_cast<uint32_t>(listed);
  put_text(s.routine, t.routine);
  put_text(s.file, t.file);
  put_text(s.function, t.function);
  s.native_line = t.native_line;
  put_text(s.native_file, t.native_file);
  put_text(s.native_function, t.native_function);
  std::memset(s.pending, 0, sizeof(s.pending));
  for (size_t i = 0; i < listed; ++i) {
    const pending_op& p = t.pending[i];
    s.pending[i] = {static_cast<uint8_t>(p.kind),
                    p.waited ? uint8_t{1} : uint8_t{0},
                    p.kind == op_kind::collective ? p.collective : uint16_t{0},
                    p.peer,
                    p.tag,
                    0,
                    p.bytes,
                    to_file(p.comm)};
  }
}

bool peer_ok(int32_t peer, int32_t world_size) {
  return peer >= proc_null && peer < world_size;
}

bool comm_ok(const file_comm& c, int32_t world_size) {
  if (c.size > static_cast<uint32_t>(world_size))
    return false;
  if (c.stride == 0 || c.size == 0)
    return true;
  const int64_t last = int64_t{c.first} + int64_t{c.stride} * (int64_t{c.size} - 1);
  return c.first >= 0 && c.first < world_size && last >= 0 && last < world_size;
}

// Checks one copied slot; "" when it is well formed.
std::string slot_problem(const file_slot& s, int32_t world_size) {
  if (s.phase > static_cast<uint8_t>(thread_phase::finalized))
    return "unknown phase " + std::to_string(s.phase);
  if (s.lang > static_cast<uint8_t>(language::python))
    return "unknown language " + std::to_string(s.lang);
  if (!peer_ok(s.peer, world_size) || !peer_ok(s.peer2, world_size))
    return "a peer outside the world of " + std::to_string(world_size) + " ranks";
  if (!comm_ok(s.comm, world_size))
    return "a communicator with members outside the world";
  if (s.pending_listed > max_listed_pending || s.pending_total < s.pending_listed ||
      s.waited_total > s.pending_total)
    return "a pending-operation count that does not add up";
  for (uint32_t i = 0; i < s.pending_listed; ++i) {
    const file_pending& p = s.pending[i];
    if (p.kind < static_cast<uint8_t>(op_kind::send) ||
        p.kind > static_cast<uint8_t>(op_kind::matched_recv))
      return "a pending operation of unknown kind " + std::to_string(p.kind);
    const bool collective = p.kind == static_cast<uint8_t>(op_kind::collective);
    if (p.waited > 1 || !peer_ok(p.peer, world_size) || !comm_ok(p.comm, world_size) ||
        (collective ? collective_name(p.collective).empty() : p.collective != 0))
      return "a malformed pending operation";
  }
  if (!get_text(s.routine) || !get_text(s.file) || !get_text(s.function) ||
      !get_text(s.native_file) || !get_text(s.native_function))
    return "a name without its terminating zero";
  return "";
}

thread_state to_thread(const file_slot& s) {
  thread_state t;
  t.phase = static_cast<thread_phase>(s.phase);
  t.lang = static_cast<language>(s.lang);
  t.line = s.line;
  t.os_thread = s.os_thread;
  t.peer = s.peer;
  t.peer2 = s.peer2;
  t.tag = s.tag;
  t.tag2 = s.tag2;
  t.bytes = s.bytes;
  t.since_ns = s.since_ns;
  t.calls_completed = s.calls_completed;
  t.comm = from_file(s.comm);
  t.pending_total = s.pending_total;
  t.waited_total = s.waited_total;
  t.routine = *get_text(s.routine);
  t.file = *get_text(s.file);
  t.function = *get_text(s.function);
  t.native_line = s.native_line;
  t.native_file = *get_text(s.native_file);
  t.native_function = *get_text(s.native_function);
  for (uint32_t i = 0; i < s.pending_listed; ++i) {
    const file_pending& p = s.pending[i];
    t.pending.push_back({static_cast<op_kind>(p.kind), p.waited != 0, p.peer, p.tag, p.bytes,
                         from_file(p.comm), p.collective});
  }
  return t;
}

// Reads the header and checks the size; `copy_slot(i, slot_bytes, slot)` copies slot i's
// `slot_bytes` into `slot` (zeroed: an older version's slot leaves its tail empty).
template <typename CopySlot>
state_read_result read_with(std::string_view head, uint64_t file_bytes, const std::string& source,
                            CopySlot&& copy_slot) {
  const std::string where = source.empty() ? "state file" : source;
  auto fail = [&](const std::string& why) {
    return state_read_result{std::nullopt, where + ": " + why};
  };
  if (head.size() < sizeof(state_magic) ||
      std::memcmp(head.data(), state_magic, sizeof(state_magic)) != 0)
    return fail("not a Strata hang state file (no strata.hang-state header)");
  if (head.size() < sizeof(file_header))
    return fail("truncated: " + std::to_string(file_bytes) + " bytes, shorter than its header");
  file_header h;
  std::memcpy(&h, head.data(), sizeof(h));
  // Files of jobs started under an earlier Strata: version 2 has no native call site (its slots
  // end before it), version 1 neither, and its header's tail is a 16-byte host name where
  // version 2 has 12 and the count of threads not described.
  const bool version_1 = h.version == 1;
  if (h.version == 0 || h.version > state_version)
    return fail("strata.hang-state version " + std::to_string(h.version) + ", this strata reads " +
                std::to_string(state_version) + " and earlier");
  const uint32_t slot_bytes = h.version < 3 ? slot_bytes_before_3 : sizeof(file_slot);
  if (h.header_bytes != sizeof(file_header) || h.slot_bytes != slot_bytes)
    return fail("malformed header (header or slot size does not match version " +
                std::to_string(h.version) + ")");
  if (h.slot_count == 0 || h.slot_count > 4096)
    return fail("malformed header (" + std::to_string(h.slot_count) + " thread slots)");
  if (h.world_size <= 0 || h.world_size > max_world_size || h.world_rank < 0 ||
      h.world_rank >= h.world_size)
    return fail("malformed header (rank " + std::to_string(h.world_rank) + " of " +
                std::to_string(h.world_size) + ")");
  const uint64_t expected = uint64_t{h.header_bytes} + uint64_t{h.slot_count} * h.slot_bytes;
  if (file_bytes < expected)
    return fail("truncated: " + std::to_string(file_bytes) + " bytes, its header says " +
                std::to_string(expected));
  char host_v1[sizeof h.host + sizeof h.threads_not_described];
  std::memcpy(host_v1, h.host, sizeof host_v1);
  const std::optional<std::string> host = version_1 ? get_text(host_v1) : get_text(h.host);
  if (!host)
    return fail("malformed header (host name without its terminating zero)");
  rank_state r;
  r.world_rank = h.world_rank;
  r.world_size = h.world_size;
  r.pid = h.pid;
  r.host = *host;
  r.observed_ns = h.observed_ns;
  r.threads_not_described = version_1 ? 0 : h.threads_not_described;
  r.source = source;
  for (uint32_t i = 0; i < h.slot_count; ++i) {
    file_slot s{};
    if (!copy_slot(i, slot_bytes, s))
      return fail("cannot read thread slot " + std::to_string(i));
    if ((s.seq & 1) != 0) {
      thread_state torn;
      torn.torn = true;
      torn.phase = thread_phase::in_mpi;
      r.threads.push_back(torn);
      continue;
    }
    if (const std::string why = slot_problem(s, h.world_size); !why.empty())
      return fail("thread slot " + std::to_string(i) + ": " + why);
    if (s.phase != static_cast<uint8_t>(thread_phase::unused))
      r.threads.push_back(to_thread(s));
  }
  return {std::move(r), ""};
}

} // namespace

bool communicator::contains(int32_t world_rank) const {
  if (!members_known())
    return false;
  if (size == 1)
    return world_rank == first;
  const int64_t offset = int64_t{world_rank} - first;
  return offset % stride == 0 && offset / stride >= 0 && offset / stride < size;
}

static_assert(static_cast<uint16_t>(routines::collective_op::neighbor_alltoallw) ==
                  collective_count,
              "the state file numbers collectives as routines::collective_op does");

std::string_view collective_name(uint16_t collective) {
  if (collective == 0 || collective > collective_count)
    return {};
  return routines::name_of(static_cast<routines::collective_op>(collective));
}

uint64_t realtime_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

state_read_result parse_state(std::string_view bytes, const std::string& source) {
  return read_with(bytes, bytes.size(), source, [&](uint32_t i, uint32_t slot_bytes, file_slot& s) {
    std::memcpy(&s, bytes.data() + sizeof(file_header) + size_t{i} * slot_bytes, slot_bytes);
    return true;
  });
}

state_read_result read_state_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return {std::nullopt, path + ": cannot open (" + std::strerror(errno) + ")"};
  struct stat st {};
  ::fstat(fd, &st);
  char head[sizeof(file_header)] = {};
  const ssize_t got = ::pread(fd, head, sizeof(head), 0);
  const std::string_view head_view(head, got > 0 ? static_cast<size_t>(got) : 0);
  state_read_result result = read_with(
      head_view, static_cast<uint64_t>(st.st_size), path,
      [&](uint32_t i, uint32_t slot_bytes, file_slot& s) {
        const off_t at = static_cast<off_t>(sizeof(file_header) + size_t{i} * slot_bytes);
        // The counter, the slot, the counter again, each read of its own: equal and even means
        // the copy is whole. (Within one read the kernel's string copy may load the counter after
        // fields it copies later, so the slot's own copy of it proves nothing.)
        for (int attempt = 0; attempt < 1000; ++attempt) {
          uint64_t before = 0;
          uint64_t after = 0;
          if (::pread(fd, &before, sizeof(before), at) != static_cast<ssize_t>(sizeof(before)) ||
              ::pread(fd, &s, slot_bytes, at) != static_cast<ssize_t>(slot_bytes) ||
              ::pread(fd, &after, sizeof(after), at) != static_cast<ssize_t>(sizeof(after)))
            return false;
          if ((before & 1) == 0 && before == after) {
            s.seq = before;
            return true;
          }
          ::sched_yield();
        }
        s.seq |= 1; // changing on every try, or its writer died mid-update: torn
        return true;
      });
  ::close(fd);
  return result;
}

std::string encode_state(const rank_state& state) {
  const uint32_t slots = std::max<uint32_t>(1, static_cast<uint32_t>(state.threads.size()));
  std::string bytes(sizeof(file_header) + slots * sizeof(file_slot), '\0');
  file_header h{};
  std::memcpy(h.magic, state_magic, sizeof(state_magic));
  h.version = state_version;
  h.header_bytes = sizeof(file_header);
  h.slot_bytes = sizeof(file_slot);
  h.slot_count = slots;
  h.world_rank = state.world_rank;
  h.world_size = state.world_size;
  h.pid = state.pid;
  h.observed_ns = state.observed_ns;
  put_text(h.host, state.host);
  h.threads_not_described = state.threads_not_described;
  std::memcpy(bytes.data(), &h, sizeof(h));
  for (size_t i = 0; i < state.threads.size(); ++i) {
    file_slot s{};
    fill_slot(s, state.threads[i]);
    s.seq = state.threads[i].torn ? 1 : 2;
    std::memcpy(bytes.data() + sizeof(file_header) + i * sizeof(file_slot), &s, sizeof(s));
  }
  return bytes;
}

std::optional<state_writer> state_writer::open(const std::string& path, int32_t world_rank,
                                               int32_t world_size, uint32_t slots,
                                               std::string& error) {
  if (slots == 0 || slots > 4096 || world_size <= 0 || world_size > max_world_size ||
      world_rank < 0 || world_rank >= world_size) {
    error = "invalid rank, size or slot count for a hang state file";
    return std::nullopt;
  }
  const size_t bytes = sizeof(file_header) + size_t{slots} * sizeof(file_slot);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = path + ": cannot create (" + std::strerror(errno) + ")";
    return std::nullopt;
  }
  // posix_fallocate rather than ftruncate: a full disk fails here, not as SIGBUS on a later store.
  if (const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); rc != 0) {
    error =
        path + ": cannot reserve " + std::to_string(bytes) + " bytes (" + std::strerror(rc) + ")";
    ::close(fd);
    return std::nullopt;
  }
  void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    error = path + ": cannot map (" + std::strerror(errno) + ")";
    return std::nullopt;
  }
  rank_state empty;
  empty.world_rank = world_rank;
  empty.world_size = world_size;
  empty.pid = ::getpid();
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  empty.host = host;
  empty.observed_ns = realtime_ns();
  empty.threads.resize(slots);
  const std::string initial = encode_state(empty);
  std::memcpy(map, initial.data(), initial.size());
  return state_writer(map, bytes, slots);
}

state_writer::state_writer(state_writer&& other) noexcept
    : map_(other.map_), bytes_(other.bytes_), slots_(other.slots_) {
  other.map_ = nullptr;
}

state_writer::~state_writer() {
  if (map_ != nullptr)
    ::munmap(map_, bytes_);
}

namespace {
file_slot& slot_at(void* map, uint32_t slot) {
  return *reinterpret_cast<file_slot*>(static_cast<char*>(map) + sizeof(file_header) +
                                       size_t{slot} * sizeof(file_slot));
}

// The seqlock's writer side: odd, the stores, even.
template <typename Change> void under_seqlock(file_slot& s, Change&& change) {
  std::atomic_ref<uint64_t> seq(s.seq);
  const uint64_t start = seq.load(std::memory_order_relaxed);
  seq.store(start + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  change(s);
  seq.store(start + 2, std::memory_order_release);
}
} // namespace

void state_writer::write(uint32_t slot, const thread_state& state) {
  if (map_ == nullptr || slot >= slots_)
    return;
  under_seqlock(slot_at(map_, slot), [&](file_slot& s) { fill_slot(s, state); });
  observe(state.since_ns);
}

void state_writer::leave_call(uint32_t slot, uint64_t now_ns) {
  if (map_ == nullptr || slot >= slots_)
    return;
  under_seqlock(slot_at(map_, slot), [&](file_slot& s) {
    s.phase = static_cast<uint8_t>(thread_phase::outside_mpi);
    s.since_ns = now_ns;
    ++s.calls_completed;
  });
  observe(now_ns);
}

void state_writer::observe(uint64_t now_ns) {
  if (map_ == nullptr)
    return;
  auto& h = *static_cast<file_header*>(map_);
  std::atomic_ref<uint64_t>(h.observed_ns).store(now_ns, std::memory_order_relaxed);
}

void state_writer::set_threads_not_described(uint32_t count) {
  if (map_ == nullptr)
    return;
  auto& h = *static_cast<file_header*>(map_);
  std::atomic_ref<uint32_t>(h.threads_not_described).store(count, std::memory_order_relaxed);
}

} // namespace strata::hang
