// Where this rank is with respect to MPI, in its hang state file (src/hang, strata.hang-state/2)
// in the spool, and on one rank the watch over every rank's file (the option hang_after).
//
// The call path only stores the call's function, call site and raw arguments in the thread's
// strata_where (libstrata, strata/where.h). A thread of the module's own reads those records (the
// thread that called MPI_Init's, and those strata_where_threads lists) a few times a second and
// turns each into its slot of the file: the routine's name, peers and roots as world ranks (the
// arguments where the routine table says they are, the core's communicator cache, read without
// calling MPI), tags, bytes, the call site's source line (resolved once per address, and only for
// a call that lasts; a Python program's, the script's line, read from the waiting thread's Python
// frame: strata_where_python_site). So a rank stuck inside MPI is described without its
// cooperation, and the call path pays a few stores.
#include "hang_watch.hpp"

#include "common/symbols.hpp"
#include "gen/routines.hpp"
#include "hang/diagnose.hpp"
#include "hang/running_job.hpp"
#include "hang/state.hpp"
#include "options.hpp"

#include <strata/where.h>

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

namespace strata::profiler {
namespace {

using namespace std::chrono_literals;
constexpr auto tick = 100ms;
// A call that has lasted this many ticks has its call site resolved (a short one never does).
constexpr int ticks_before_resolving = 2;
// Threads beside the one that called MPI_Init whose calls the state file describes.
constexpr uint32_t other_thread_slots = 15;

hang::language language_of(const std::string& file) {
  auto ends = [&](std::string_view suffix) { return file.ends_with(suffix); };
  if (ends(".c"))
    return hang::language::c;
  if (ends(".cpp") || ends(".cc") || ends(".cxx") || ends(".C"))
    return hang::language::cxx;
  if (ends(".f90") || ends(".F90") || ends(".f") || ends(".F") || ends(".f95") || ends(".f08"))
    return hang::language::fortran;
  if (ends(".py"))
    return hang::language::python;
  return hang::language::unknown;
}

bool read_own(const void* address, void* out, size_t bytes);

// A whole copy of the record, or nullopt while its thread keeps changing it. Another thread's
// record may go with its thread as it is read: copied with read_own, which fails instead.
std::optional<strata_where> copy_where(const strata_where* where, bool lives) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    uint64_t before = 0, after = 0;
    strata_where copy;
    if (lives) {
      before = std::atomic_ref<const uint64_t>(where->seq).load(std::memory_order_acquire);
      std::memcpy(&copy, where, sizeof(copy));
      std::atomic_thread_fence(std::memory_order_acquire);
      after = std::atomic_ref<const uint64_t>(where->seq).load(std::memory_order_relaxed);
    } else if (!read_own(&where->seq, &before, sizeof(before)) ||
               !read_own(where, &copy, sizeof(copy)) ||
               !read_own(&where->seq, &after, sizeof(after))) {
      return std::nullopt;
    }
    if (before == after) {
      copy.seq = before;
      return copy;
    }
  }
  return std::nullopt;
}

// What a request a function makes is, for the message queue: a point-to-point send or receive,
// nonblocking (MPI_Isend) or persistent (MPI_Send_init, active after MPI_Start), the receive of
// a matched message (MPI_Imrecv), a nonblocking collective (MPI_Ibarrier).
enum class post_kind : uint8_t {
  none,
  send,
  recv,
  persistent_send,
  persistent_recv,
  matched_recv,
  collective
};

post_kind post_kind_of(std::string_view name) {
  const routines::info* r = routines::find(name);
  switch (r != nullptr ? routines::request_use_of(*r) : routines::request_use::none) {
  case routines::request_use::sends:
    return post_kind::send;
  case routines::request_use::makes_send:
    return post_kind::persistent_send;
  case routines::request_use::receives:
    return post_kind::recv;
  case routines::request_use::makes_receive:
    return post_kind::persistent_recv;
  case routines::request_use::receives_matched:
    return post_kind::matched_recv;
  case routines::request_use::collective:
    return post_kind::collective;
  default:
    return post_kind::none;
  }
}

// Where a blocking wait on requests names them among its arguments, from the routine table: one
// MPI_Request* (MPI_Wait), or an array and its count (MPI_Waitall, MPI_Waitany, MPI_Waitsome);
// `at` -1 for any other routine (one the record does not keep the arguments of included).
struct waited_requests {
  int8_t at = -1;
  int8_t count_at = -1; // -1: one request
};

waited_requests waited_requests_of(const routines::info* r) {
  if (r == nullptr)
    return {};
  const routines::blocking_wait wait = routines::blocking_wait_of(*r);
  if (wait != routines::blocking_wait::all_requests && wait != routines::blocking_wait::any_request)
    return {};
  if (r->at.requests >= STRATA_WHERE_ARGS || r->at.request_count >= STRATA_WHERE_ARGS)
    return {};
  return {r->at.requests, r->at.request_count};
}

// Copies memory of this process that its threads may have freed since (a request variable of
// a function that returned, an array the application freed): false where nothing is mapped.
bool read_own(const void* address, void* out, size_t bytes) {
  iovec local{out, bytes};
  iovec remote{const_cast<void*>(address), bytes}; // NOLINT(cppcoreguidelines-pro-type-const-cast)
  return ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(bytes);
}

// One thread of the rank, as a slot of the state file describes it.
struct thread_watch {
  const strata_where* where = nullptr; // null: the slot is free
  // The thread's requests (claimed by the core on its first one).
  const strata_where_posts* posts = nullptr;
  uint64_t last_seq = ~uint64_t{0};
  int ticks_same = 0;
  bool site_resolved = false;
  // The Python line the thread's call numbered python_seq (its record's seq while in it) came
  // from, when one was read: once that call returned, it names the thread's last call.
  uint64_t python_seq = 0;
  std::string python_file, python_function;
  uint32_t python_line = 0;
  bool written = false; // its slot holds it
  hang::thread_state described;
};

struct hang_watch {
  std::optional<hang::state_writer> writer;
  // Slot 0: the thread that called MPI_Init; the others: other threads that made a timed call
  // (strata_where_threads), each in its slot while it lives.
  std::vector<thread_watch> threads;
  std::vector<std::string> names;
  // Per function id: where its peer, tag, communicator, ... are among its arguments (the routine
  // table), or null for a function the table does not know.
  std::vector<const routines::info*> routines;
  int world_size = 1;
  int rank = 0;
  uint64_t world_bits = 0; // MPI_COMM_WORLD's handle's bits, as communicator_at reads one
  // Per function id: what a request it makes is and which requests a wait names.
  std::vector<post_kind> post_kinds;
  std::vector<uint16_t> collectives; // per function id: a nonblocking collective's op, else 0
  std::vector<waited_requests> waits;
  uint64_t null_request = 0; // MPI_REQUEST_NULL's bits
  // The watch over the job (hang_after): rank 0 only.
  std::string spool, key;
  uint64_t hang_after_ns = 0;
  bool reported = false;
  // Under the monitor's tree (transport=tree) the tool ranks read the files.
  hang::tree_watch tree;

  std::map<uint64_t, common::source_location> sites;

  std::thread thread;
  std::mutex lock;
  std::condition_variable wake;
  bool stopping = false;
};

hang_watch* watch = nullptr;
std::string state_path; // this rank's file, removed once the job's record is written

// A rank of the communicator as a world rank, or MPI's special values as the state file has them.
int32_t to_world(int64_t rank, const hang::communicator& comm) {
  if (rank == MPI_ANY_SOURCE)
    return hang::any_source;
  if (rank == MPI_PROC_NULL)
    return hang::proc_null;
  if (rank < 0 || rank >= comm.size || !comm.members_known())
    return hang::no_peer;
  return comm.member(static_cast<uint32_t>(rank));
}

// A communicator as members in world ranks, from its handle as strata_where keeps arguments
// (an integer handle in the low half, the high half left as it was).
hang::communicator communicator_at(const hang_watch& h, const uint64_t& raw,
                                   std::vector<int>& table) {
  hang::communicator c;
  uint64_t bits = 0;
  std::memcpy(&bits, &raw, sizeof(MPI_Comm)); // NOLINT(bugprone-sizeof-expression)
  int32_t size = 0;
  const int* ranks = nullptr;
  table.clear();
  if (strata_where_comm != nullptr && strata_where_comm(&raw, &size, &ranks) != 0) {
    if (ranks == nullptr)
      for (int i = 0; i < size; ++i)
        table.push_back(i);
    else
      table.assign(ranks, ranks + size);
  } else if (bits == h.world_bits) {
    for (int i = 0; i < h.world_size; ++i)
      table.push_back(i);
  } else {
    c.id = bits;
    return c; // unknown members
  }
  c.size = static_cast<uint32_t>(table.size());
  if (table.empty())
    return c;
  c.first = table[0];
  c.stride = table.size() > 1 ? table[1] - table[0] : 0;
  for (size_t i = 1; i < table.size() && c.stride != 0; ++i)
    if (table[i] - table[i - 1] != c.stride)
      c.stride = 0;
  // The same id on every rank for the same members: a handle's bits differ between processes.
  c.id = (uint64_t{c.size} << 40) ^ (uint64_t(uint32_t(c.first)) << 20) ^ uint32_t(c.stride) ^
         (c.stride == 0 && c.size > 1 ? bits : 0);
  return c;
}

void describe(hang_watch& h, const strata_where& w, hang::thread_state& t) {
  t.os_thread = static_cast<uint64_t>(w.thread);
  t.calls_completed = w.seq / 2;
  if (w.seq == 0) {
    t.phase = hang::thread_phase::not_started;
    return;
  }
  t.phase = (w.seq & 1) != 0 ? hang::thread_phase::in_mpi : hang::thread_phase::outside_mpi;
  const auto fid = static_cast<size_t>(w.function);
  t.routine = fid < h.names.size() ? h.names[fid] : "";
  t.peer = t.peer2 = hang::no_peer;
  t.tag = t.tag2 = 0;
  t.bytes = 0;
  t.comm = {};
  if (fid >= h.routines.size() || h.routines[fid] == nullptr)
    return;
  const routines::argument_positions& at = h.routines[fid]->at;
  // The record keeps the first STRATA_WHERE_ARGS arguments.
  auto kept = [](int8_t position) { return position >= 0 && position < STRATA_WHERE_ARGS; };
  std::vector<int> table;
  if (kept(at.comm))
    t.comm = communicator_at(h, w.args[at.comm], table);
  auto int_at = [&](int i) { return static_cast<int64_t>(static_cast<int32_t>(w.args[i])); };
  const int8_t peer = at.peer >= 0 ? at.peer : at.root; // a collective's root is its peer
  if (kept(peer))
    t.peer = to_world(int_at(peer), t.comm);
  if (kept(at.recv_peer))
    t.peer2 = to_world(int_at(at.recv_peer), t.comm);
  if (kept(at.tag))
    t.tag = static_cast<int32_t>(int_at(at.tag));
  if (kept(at.recv_tag))
    t.tag2 = static_cast<int32_t>(int_at(at.recv_tag));
  if (kept(at.count) && kept(at.type) && strata_where_type_size != nullptr) {
    const int64_t size = strata_where_type_size(&w.args[at.type]);
    const int64_t count = int_at(at.count);
    if (size > 0 && count > 0)
      t.bytes = static_cast<uint64_t>(size * count);
  }
}

// The Python line a call in progress came from (an MPI call from an extension module such as
// mpi4py, in a process running CPython), read from the thread's own Python frame while the
// thread stays in that call: its record's seq the same before and after. False otherwise.
bool read_python_site(thread_watch& tw, bool lives, const strata_where& w, const void* site) {
  if (strata_where_python_site == nullptr || (w.seq & 1) == 0)
    return false;
  char file[hang::max_file * 4];
  char function[hang::max_function * 4];
  int32_t line = 0;
  if (strata_where_python_site(w.thread, site, file, sizeof file, &line, function,
                               sizeof function) == 0)
    return false;
  const std::optional<strata_where> after = copy_where(tw.where, lives);
  if (!after || after->seq != w.seq)
    return false; // the call returned meanwhile: its frame may have changed
  tw.python_seq = w.seq;
  tw.python_file = file;
  tw.python_function = function;
  tw.python_line = line > 0 ? static_cast<uint32_t>(line) : 0;
  return true;
}

void resolve_site(hang_watch& h, thread_watch& tw, bool lives, const strata_where& w,
                  hang::thread_state& t) {
  // A call that took the long way noted a return address inside libstrata: its own site is the
  // one dispatch left beside it for this call (strata_where::marked_site).
  const bool marked = w.marked_seq != 0 && (w.seq == w.marked_seq || w.seq == w.marked_seq + 1);
  const void* site = marked ? w.marked_site : w.call_site;
  const auto address = reinterpret_cast<uint64_t>(site);
  auto found = h.sites.find(address);
  if (found == h.sites.end()) {
    std::vector<common::source_location> resolved = common::resolve_return_addresses({address});
    found =
        h.sites.emplace(address, resolved.empty() ? common::source_location{} : resolved[0]).first;
  }
  t.file = found->second.file;
  t.line = found->second.line > 0 ? static_cast<uint32_t>(found->second.line) : 0;
  t.function = found->second.function;
  t.native_file.clear();
  t.native_function.clear();
  t.native_line = 0;
  // A call from Python names the script's line, the compiled caller beside it; a returned
  // call the line read while it was in progress.
  if (read_python_site(tw, lives, w, site) || (tw.python_seq != 0 && tw.python_seq + 1 == w.seq)) {
    t.native_file = std::move(t.file);
    t.native_line = t.line;
    t.native_function = std::move(t.function);
    t.file = tw.python_file;
    t.line = tw.python_line;
    t.function = tw.python_function;
  }
  t.lang = language_of(t.file);
}

// The handles a wait in progress names (MPI_REQUEST_NULL left out); empty for another call.
std::vector<uint64_t> waited_handles(const hang_watch& h, const strata_where& w) {
  std::vector<uint64_t> handles;
  const auto fid = static_cast<size_t>(w.function);
  const waited_requests form = fid < h.waits.size() ? h.waits[fid] : waited_requests{};
  if ((w.seq & 1) == 0 || form.at < 0)
    return handles;
  const void* at = nullptr; // the application's MPI_Request* or array, as the record keeps it
  std::memcpy(&at, &w.args[form.at], sizeof(at));
  const int64_t count =
      form.count_at < 0 ? 1
                        : std::clamp<int64_t>(static_cast<int32_t>(w.args[form.count_at]), 0, 4096);
  std::vector<MPI_Request> requests(static_cast<size_t>(count));
  if (count == 0 || at == nullptr ||
      !read_own(at, requests.data(), requests.size() * sizeof(MPI_Request)))
    return handles;
  for (const MPI_Request& r : requests) {
    uint64_t bits = 0;
    std::memcpy(&bits, &r, sizeof(r)); // NOLINT(bugprone-sizeof-expression)
    if (bits != h.null_request)
      handles.push_back(bits);
  }
  return handles;
}

// The thread's pending requests, from its latest ones (strata_where_posts): those its current
// wait names (exact: a handle is made again only once freed), and the others whose variable
// still holds the handle (a completion sets it to MPI_REQUEST_NULL; a persistent request's
// activity is not seen, so it is listed only when waited for). Waited ones first.
void describe_pending(hang_watch& h, thread_watch& tw, const strata_where& w,
                      hang::thread_state& t) {
  t.pending.clear();
  t.pending_total = 0;
  t.waited_total = 0;
  // A thread's table goes to another thread once it ends: looked up again when not its own.
  if (tw.posts != nullptr &&
      std::atomic_ref<const strata_where* const>(tw.posts->owner).load(std::memory_order_acquire) !=
          tw.where)
    tw.posts = nullptr;
  if (tw.posts == nullptr && strata_where_posts_of != nullptr)
    tw.posts = strata_where_posts_of(tw.where);
  const std::vector<uint64_t> waited = waited_handles(h, w);
  t.waited_total = static_cast<uint32_t>(waited.size());
  if (tw.posts == nullptr) {
    t.pending_total = t.waited_total;
    return;
  }
  // The tables are libstrata's own, never freed: read directly.
  std::vector<strata_where_post> posts(STRATA_WHERE_POSTS);
  const std::atomic_ref<const uint64_t> made(tw.posts->made);
  const uint64_t before = made.load(std::memory_order_acquire);
  std::memcpy(posts.data(), tw.posts->posts, sizeof(tw.posts->posts));
  std::atomic_thread_fence(std::memory_order_acquire);
  const uint64_t after = made.load(std::memory_order_relaxed);
  const uint64_t first = after >= STRATA_WHERE_POSTS ? after - STRATA_WHERE_POSTS + 1 : 0;
  std::vector<hang::pending_op> others;
  std::vector<uint64_t> seen;
  uint32_t waited_found = 0;
  std::vector<int> table;
  for (uint64_t i = before; i-- > first;) {
    const strata_where_post& p = posts[i % STRATA_WHERE_POSTS];
    if (std::find(seen.begin(), seen.end(), p.handle) != seen.end())
      continue; // an older request whose handle MPI made again
    seen.push_back(p.handle);
    const auto fid = static_cast<size_t>(p.function);
    const post_kind kind = fid < h.post_kinds.size() ? h.post_kinds[fid] : post_kind::none;
    if (kind == post_kind::none)
      continue;
    const bool is_waited = std::find(waited.begin(), waited.end(), p.handle) != waited.end();
    const bool persistent =
        kind == post_kind::persistent_send || kind == post_kind::persistent_recv;
    if (!is_waited) {
      uint64_t now_there = 0;
      if (persistent || !read_own(p.request, &now_there, sizeof(MPI_Request)) ||
          now_there != p.handle)
        continue;
    }
    hang::pending_op op;
    op.waited = is_waited;
    op.bytes = p.bytes > 0 ? static_cast<uint64_t>(p.bytes) : 0;
    if (kind == post_kind::collective) {
      // Its communicator and root (strata_where_post): whom it waits for is its members.
      op.kind = hang::op_kind::collective;
      op.collective = h.collectives[fid];
      op.comm = communicator_at(h, p.args[2], table);
      if (h.routines[fid]->at.root >= 0)
        op.peer = to_world(static_cast<int32_t>(p.args[0]), op.comm);
    } else if (kind == post_kind::matched_recv) {
      op.kind = hang::op_kind::matched_recv; // its source and tag went with the probe's message
    } else {
      op.kind = kind == post_kind::send || kind == post_kind::persistent_send ? hang::op_kind::send
                                                                              : hang::op_kind::recv;
      op.comm = communicator_at(h, p.args[2], table);
      op.peer = to_world(static_cast<int32_t>(p.args[0]), op.comm);
      op.tag = static_cast<int32_t>(p.args[1]);
    }
    if (is_waited) {
      ++waited_found;
      t.pending.push_back(op);
    } else {
      others.push_back(op);
    }
  }
  // The oldest first, as they were posted.
  std::reverse(t.pending.begin(), t.pending.end());
  std::reverse(others.begin(), others.end());
  t.pending.insert(t.pending.end(), others.begin(), others.end());
  t.pending_total = static_cast<uint32_t>(t.pending.size()) + (t.waited_total - waited_found);
}

// Rank 0 with hang_after: every rank's file, and the diagnosis once the job hangs.
void check_job(hang_watch& h) {
  if (h.hang_after_ns == 0 || h.reported || h.spool.empty())
    return;
  hang::running_job job;
  job.spool = h.spool;
  job.key = h.key;
  job.files.inputs = {h.spool};
  job.files.job = h.key;
  // A rank still making its file, or the tree not answered yet: a later tick.
  const hang::job_look look = hang::look_at_job(h.tree, job, hang::realtime_ns(), h.hang_after_ns);
  if (look.result != hang::job_look::step::judged)
    return;
  const hang::diagnosis& d = look.d;
  if (d.result != hang::verdict::hang)
    return;
  h.reported = true;
  const std::string text = hang::format_text(d);
  const std::string path = h.spool + "/" + h.key + ".hang.txt";
  std::ofstream(path) << text;
  std::fprintf(stderr, "strata: the job hangs (hang_after=%g s; also in %s):\n%s",
               static_cast<double>(h.hang_after_ns) / 1e9, path.c_str(), text.c_str());
  std::fflush(stderr);
}

// One thread's slot, written when what it says changed.
void watch_thread(hang_watch& h, uint32_t slot, uint64_t now) {
  thread_watch& tw = h.threads[slot];
  const std::optional<strata_where> w = copy_where(tw.where, slot == 0);
  if (!w || (w->seq == 0 && slot != 0))
    return; // changing on every try, or gone; a thread is listed once it made a call
  bool changed = !tw.written;
  if (w->seq != tw.last_seq) {
    tw.last_seq = w->seq;
    tw.ticks_same = 0;
    tw.site_resolved = false;
    describe(h, *w, tw.described);
    tw.described.file.clear();
    tw.described.function.clear();
    tw.described.line = 0;
    tw.described.native_file.clear();
    tw.described.native_function.clear();
    tw.described.native_line = 0;
    tw.described.since_ns = now;
    changed = true;
  } else if (++tw.ticks_same >= ticks_before_resolving && !tw.site_resolved && w->seq != 0) {
    resolve_site(h, tw, slot == 0, *w, tw.described);
    tw.site_resolved = true;
    changed = true;
  }
  // Completions the call path does not see (a poll only counted) change the queue too.
  hang::thread_state queue = tw.described;
  describe_pending(h, tw, *w, queue);
  if (queue.pending != tw.described.pending || queue.pending_total != tw.described.pending_total ||
      queue.waited_total != tw.described.waited_total) {
    tw.described.pending = std::move(queue.pending);
    tw.described.pending_total = queue.pending_total;
    tw.described.waited_total = queue.waited_total;
    changed = true;
  }
  if (changed)
    h.writer->write(slot, tw.described);
  tw.written = true;
}

// The other threads that made a timed call, each kept in its slot while it is listed; a slot
// whose thread ended is written unused. Threads beyond the file's slots, or beyond libstrata's
// list, are not described: the state counts them.
void follow_threads(hang_watch& h) {
  if (h.threads.size() < 2 || strata_where_threads == nullptr)
    return;
  std::vector<const strata_where*> listed(STRATA_WHERE_THREADS);
  listed.resize(
      static_cast<size_t>(strata_where_threads(listed.data(), static_cast<int>(listed.size()))));
  std::erase(listed, h.threads[0].where);
  for (size_t slot = 1; slot < h.threads.size(); ++slot) {
    thread_watch& tw = h.threads[slot];
    if (tw.where == nullptr)
      continue;
    const auto found = std::find(listed.begin(), listed.end(), tw.where);
    if (found != listed.end()) {
      listed.erase(found);
      continue;
    }
    if (tw.written)
      h.writer->write(static_cast<uint32_t>(slot), hang::thread_state{});
    tw = thread_watch{};
  }
  // A thread is listed on its first call that a module sees, which may leave no record (a
  // call only counted): it takes a slot once it has a call to describe. Until then it is not
  // described, and counted so: it called MPI and may be computing, so its rank is not known to
  // be all waiting.
  const auto unrecorded = std::erase_if(listed, [](const strata_where* w) {
    uint64_t seq = 0;
    return !read_own(&w->seq, &seq, sizeof(seq)) || seq == 0;
  });
  for (size_t slot = 1; slot < h.threads.size() && !listed.empty(); ++slot)
    if (h.threads[slot].where == nullptr) {
      h.threads[slot].where = listed.back();
      listed.pop_back();
    }
  // What the state cannot describe, said in it: the listed threads left without a slot, and
  // those libstrata could not list.
  const int unlisted =
      strata_where_unlisted_threads != nullptr ? strata_where_unlisted_threads() : 0;
  h.writer->set_threads_not_described(static_cast<uint32_t>(listed.size() + unrecorded) +
                                      static_cast<uint32_t>(std::max(unlisted, 0)));
}

void watch_loop(hang_watch& h) {
  int ticks = 0;
  std::unique_lock guard(h.lock);
  while (!h.stopping) {
    guard.unlock();
    const uint64_t now = hang::realtime_ns();
    follow_threads(h);
    for (uint32_t slot = 0; slot < h.threads.size(); ++slot)
      if (h.threads[slot].where != nullptr)
        watch_thread(h, slot, now);
    h.writer->observe(now);
    if (++ticks % 5 == 0)
      check_job(h);
    guard.lock();
    h.wake.wait_for(guard, tick, [&] { return h.stopping; });
  }
}

} // namespace

void start_hang_watch(module_state& s) {
  // One job's files per spool: the overhead module, in the same job, keeps none.
  if (is_overhead_module || s.spool.empty() || strata_where_of_this_thread == nullptr ||
      watch != nullptr)
    return;
  auto* h = new hang_watch;
  const std::string path = s.spool + "/" + s.key + ".rank" + std::to_string(s.rank) + ".hang";
  // One slot per thread that may be inside MPI: the thread that called MPI_Init, and under
  // MPI_THREAD_SERIALIZED or MULTIPLE the first others that call MPI.
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  const uint32_t slots = level >= MPI_THREAD_SERIALIZED ? other_thread_slots + 1 : 1;
  h->threads.resize(slots);
  std::string error;
  std::optional<hang::state_writer> opened =
      hang::state_writer::open(path, s.rank, s.world_size, slots, error);
  if (opened)
    h->writer.emplace(std::move(*opened));
  if (!h->writer) {
    ::unlink(path.c_str()); // what a failed reservation left
    // A full spool is said once already, by the rank file or the record.
    if (s.rank == 0 && error.find(std::strerror(ENOSPC)) == std::string::npos)
      s.host->log(s.self, ("no hang state is kept: " + error).c_str());
    delete h;
    return;
  }
  // `strata run --hang-after` watches the job's files where it said.
  if (const char* dir = std::getenv("STRATA_HANG_WATCH_DIR"); dir != nullptr && *dir != '\0') {
    const std::string link =
        std::string(dir) + "/" + s.key + ".rank" + std::to_string(s.rank) + ".hang";
    if (::symlink(path.c_str(), link.c_str()) != 0 && s.rank == 0)
      s.host->log(s.self, ("strata run cannot watch this job for hangs: cannot link " + link +
                           " (" + std::strerror(errno) + ")")
                              .c_str());
  }
  state_path = path;
  h->threads[0].where = strata_where_of_this_thread();
  h->names = s.names;
  for (const std::string& name : s.names) {
    const routines::info* r = routines::find(name);
    h->routines.push_back(r);
    h->collectives.push_back(r != nullptr && routines::request_use_of(*r) ==
                                                 routines::request_use::collective
                                 ? static_cast<uint16_t>(r->op)
                                 : uint16_t{0});
    h->post_kinds.push_back(post_kind_of(name));
    h->waits.push_back(waited_requests_of(r));
  }
  MPI_Request null_request = MPI_REQUEST_NULL;
  std::memcpy(&h->null_request, &null_request,
              sizeof(null_request)); // NOLINT(bugprone-sizeof-expression)
  h->world_size = s.world_size;
  h->rank = s.rank;
  MPI_Comm world = MPI_COMM_WORLD;
  std::memcpy(&h->world_bits, &world, sizeof(world)); // NOLINT(bugprone-sizeof-expression)
  h->spool = s.spool;
  h->key = s.key;
  if (s.rank == 0)
    h->hang_after_ns = static_cast<uint64_t>(options::current().hang_after_s * 1e9);
  h->thread = std::thread([h] { watch_loop(*h); });
  watch = h;
}

void stop_hang_watch(bool finalized) {
  hang_watch* h = watch;
  if (h == nullptr)
    return;
  {
    std::lock_guard guard(h->lock);
    h->stopping = true;
  }
  h->wake.notify_all();
  h->thread.join();
  if (finalized) {
    thread_watch& first = h->threads[0];
    first.described.phase = hang::thread_phase::finalized;
    first.described.routine = "MPI_Finalize";
    first.described.since_ns = hang::realtime_ns();
    h->writer->write(0, first.described);
    // The other threads' calls are over once MPI is.
    for (uint32_t slot = 1; slot < h->threads.size(); ++slot)
      if (h->threads[slot].written)
        h->writer->write(slot, hang::thread_state{});
  }
  watch = nullptr;
  delete h;
}

void remove_hang_state() {
  if (!state_path.empty())
    ::unlink(state_path.c_str());
  state_path.clear();
}

} // namespace strata::profiler
