// The `trace` module: every MPI call and every user region of each rank, kept in memory as fixed
// records (src/trace/buffer.hpp) and written at finalize as one OTF2 archive per job, with the
// conventions of Score-P (docs/tracing.md) so that Vampir, Scalasca and `strata analyze` read it.
//
// Most functions are observed as events (one exit callback: the core's decoded event has both
// times). The completion functions (Wait/Test and their -all/-any/-some forms) are wrapped, since
// the requests they complete and the statuses they fill are gone or hidden by the time an event
// callback could read them.
#include <mpi.h>
#include <otf2/OTF2_MPI_Collectives.h>
#include <otf2/otf2.h>
#include <strata/module.h>
#include <strata/zmpi.h>

#include "common/symbols.hpp"
#include "trace/buffer.hpp"
#include "trace/clock.hpp"
#include "trace/options.hpp"
#include "trace/unify.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fnmatch.h>
#include <limits>
#include <map>
#include <memory>
#include <pthread.h>
#include <string>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace strata::trace {
namespace {

// What a function is, for the records it makes and the OTF2 region role it gets.
enum class fn_class : uint8_t {
  other,
  send,     // blocking send: MpiSend
  isend,    // MpiIsend, completed in a Wait/Test
  recv,     // blocking receive: MpiRecv with the status's source and tag
  irecv,    // MpiIrecvRequest, MpiIrecv in the completing Wait/Test
  sendrecv, // MpiSend and MpiRecv
  collective,
  completion, // Wait/Test family (wrapped)
  p2p_other,  // probes, persistent requests, cancel: point-to-point without message records
};

struct fn_info {
  fn_class cls = fn_class::other;
  OTF2_CollectiveOp op = OTF2_COLLECTIVE_OP_BARRIER;
  bool wanted = false;
};

// Open addressing from the MPI request handle to the trace's request id, for Isend/Irecv until
// their completion. Fixed size: no allocation per request; when full, requests go untracked.
struct pending_request {
  uint64_t handle = 0; // 0 = free
  uint32_t id = 0;
  uint32_t comm = 0;
  bool recv = false;
};
constexpr size_t request_slots = 1u << 16;
constexpr uint64_t tombstone = ~uint64_t{0};

struct trace_state {
  MPI_Comm world = MPI_COMM_NULL; // the tools' world of the application's processes
  const strata_host* host = nullptr;
  int self = 0;
  options opt;
  std::unique_ptr<event_buffer> buffer;
  std::vector<fn_info> functions;
  pthread_t traced_thread = 0; // the thread that loaded the module, while recording
  uint64_t window_begin = 0;
  uint64_t window_end = std::numeric_limits<uint64_t>::max();
  int rank = 0;
  int world_size = 1;
  MPI_Comm clock_comm = MPI_COMM_NULL; // a private duplicate of the world for the ping-pongs
  std::string dir;
  // Communicators: the core's comm id -> our index (0 = not yet seen), members as world ranks.
  std::vector<uint32_t> comm_index;
  std::vector<std::vector<int>> comm_members{{}};
  // Requests.
  std::vector<pending_request> requests = std::vector<pending_request>(request_slots);
  uint32_t next_request = 1;
  // User regions: names by index, a pointer cache in front of the name map, the open regions.
  std::vector<std::string> region_names;
  std::vector<bool> region_wanted;
  std::unordered_map<std::string, uint32_t> region_by_name;
  struct cached_name {
    const char* pointer = nullptr;
    uint32_t index = 0;
  };
  cached_name name_cache[256];
  std::vector<int64_t> open_regions; // index, or -1 for a region not recorded
  uint64_t unbalanced_ends = 0;
  // Clock alignment.
  clock_line clock;
  double stddev_init = 0;
  double stddev_final = 0;
  uint64_t init_mono = 0;
  uint64_t init_real = 0;
};

trace_state* g_state = nullptr;
// Only the thread that initialised MPI is traced (one OTF2 location per rank, events in order),
// and only while recording: `traced_thread` is that thread while recording, 0 otherwise, so one
// comparison with pthread_self() (a load from the thread pointer) says both.
inline bool tracing(const trace_state* s) {
  return pthread_equal(s->traced_thread, pthread_self()) != 0;
}

uint64_t realtime_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// ---- recording ------------------------------------------------------------------------------

uint32_t comm_index_slow(trace_state* s, const strata_event* ev) {
  if (ev->comm_id >= s->comm_index.size())
    s->comm_index.resize(std::max<size_t>(ev->comm_id + 1, s->comm_index.size() * 2), 0);
  uint32_t& index = s->comm_index[ev->comm_id];
  if (index == 0) {
    std::vector<int> members(static_cast<size_t>(std::max(ev->comm_size, 0)));
    for (size_t r = 0; r < members.size(); ++r)
      members[r] = ev->comm_world_ranks != nullptr ? ev->comm_world_ranks[r] : static_cast<int>(r);
    index = static_cast<uint32_t>(s->comm_members.size());
    s->comm_members.push_back(std::move(members));
  }
  return index;
}

inline uint32_t comm_index(trace_state* s, const strata_event* ev) {
  if (ev->comm_id == 0)
    return 0;
  if (ev->comm_id < s->comm_index.size() && s->comm_index[ev->comm_id] != 0)
    return s->comm_index[ev->comm_id];
  return comm_index_slow(s, ev);
}

inline size_t request_hash(uint64_t handle) {
  return static_cast<size_t>((handle * 0x9E3779B97F4A7C15ull) >> 48) & (request_slots - 1);
}

void track_request(trace_state* s, uint64_t handle, uint32_t id, uint32_t comm, bool recv) {
  size_t i = request_hash(handle);
  size_t free_slot = request_slots;
  for (size_t probes = 0; probes < request_slots; ++probes, i = (i + 1) & (request_slots - 1)) {
    pending_request& p = s->requests[i];
    if (p.handle == handle || p.handle == 0) { // a handle MPI reused replaces the old entry
      if (p.handle == 0 && free_slot != request_slots)
        i = free_slot;
      s->requests[i] = pending_request{handle, id, comm, recv};
      return;
    }
    if (p.handle == tombstone && free_slot == request_slots)
      free_slot = i;
  }
  if (free_slot != request_slots)
    s->requests[free_slot] = pending_request{handle, id, comm, recv};
}

bool take_request(trace_state* s, uint64_t handle, pending_request& out) {
  if (handle == 0)
    return false;
  size_t i = request_hash(handle);
  for (size_t probes = 0; probes < request_slots; ++probes, i = (i + 1) & (request_slots - 1)) {
    pending_request& p = s->requests[i];
    if (p.handle == 0)
      return false;
    if (p.handle == handle) {
      out = p;
      p.handle = tombstone;
      return true;
    }
  }
  return false;
}

inline bool in_window(const trace_state* s, uint64_t t) {
  return t >= s->window_begin && t <= s->window_end;
}

void on_exit(strata_event* ev, void* raw) {
  auto* s = static_cast<trace_state*>(raw);
  if (!tracing(s) || !in_window(s, ev->t_enter_ns))
    return;
  const fn_info& f = s->functions[static_cast<size_t>(ev->function)];
  record* r = s->buffer->append();
  if (r == nullptr)
    return;
  r->t_enter = ev->t_enter_ns;
  r->t_leave = ev->t_exit_ns;
  r->call_site = reinterpret_cast<uint64_t>(ev->call_site);
  r->bytes_sent = ev->bytes_sent;
  r->bytes_received = ev->bytes_received >= 0 ? ev->bytes_received : ev->bytes_expected;
  r->request = 0;
  r->id = record::make_id(record_kind::mpi_call, static_cast<uint32_t>(ev->function));
  r->comm = comm_index(s, ev);
  r->peer = ev->peer;
  r->tag = ev->tag;
  r->source = ev->status_source;
  r->recv_tag = ev->status_tag;
  r->root = ev->root;
  if ((f.cls == fn_class::isend || f.cls == fn_class::irecv) && ev->request != 0 &&
      ev->result == MPI_SUCCESS) {
    r->request = s->next_request++;
    track_request(s, ev->request, r->request, r->comm, f.cls == fn_class::irecv);
  }
}

uint32_t region_index(trace_state* s, const char* name) {
  auto& slot = s->name_cache[(reinterpret_cast<uintptr_t>(name) >> 3) & 255u];
  if (slot.pointer == name && std::strcmp(s->region_names[slot.index].c_str(), name) == 0)
    return slot.index;
  auto [it, added] = s->region_by_name.emplace(name, static_cast<uint32_t>(s->region_names.size()));
  if (added) {
    s->region_names.emplace_back(name);
    s->region_wanted.push_back(s->opt.region_wanted(name));
  }
  slot = {name, it->second};
  return it->second;
}

void on_region_begin(const char* name, const void* call_site, uint64_t t, void* raw) {
  auto* s = static_cast<trace_state*>(raw);
  if (!tracing(s))
    return;
  const uint32_t index = region_index(s, name);
  int64_t open = -1;
  if (s->region_wanted[index] && in_window(s, t)) {
    if (record* r = s->buffer->append()) {
      *r = record{};
      r->t_enter = t;
      r->t_leave = t;
      r->call_site = reinterpret_cast<uint64_t>(call_site);
      r->id = record::make_id(record_kind::region_enter, index);
      open = index;
    }
  }
  s->open_regions.push_back(open);
}

void on_region_end(const char*, const void* call_site, uint64_t t, void* raw) {
  auto* s = static_cast<trace_state*>(raw);
  if (!tracing(s))
    return;
  if (s->open_regions.empty()) {
    ++s->unbalanced_ends;
    return;
  }
  const int64_t open = s->open_regions.back();
  s->open_regions.pop_back();
  if (open < 0)
    return;
  // The leave of a recorded enter is kept even past the time window, so regions stay nested.
  if (record* r = s->buffer->append()) {
    *r = record{};
    r->t_enter = t;
    r->t_leave = t;
    r->call_site = reinterpret_cast<uint64_t>(call_site);
    r->id = record::make_id(record_kind::region_leave, static_cast<uint32_t>(open));
  }
}

// ---- the wrapped completion functions ---------------------------------------------------------

uint64_t request_bits(MPI_Request request) {
  uint64_t bits = 0;
  // A pointer (Open MPI) or an integer (MPICH): its bits, either way.
  static_assert(sizeof(MPI_Request) <= sizeof(bits)); // NOLINT(bugprone-sizeof-expression)
  std::memcpy(&bits, &request, sizeof(MPI_Request));  // NOLINT(bugprone-sizeof-expression)
  return bits;
}

struct completion_scratch {
  std::vector<uint64_t> handles;
  std::vector<MPI_Status> statuses;
};

completion_scratch& scratch(size_t n) {
  static completion_scratch c; // the traced thread only
  if (c.handles.size() < n) {
    c.handles.resize(n);
    c.statuses.resize(n);
  }
  return c;
}

bool tracing_now(trace_state* s) {
  return s != nullptr && tracing(s);
}

// The call's record, then one record per request it completed.
void record_completion_call(trace_state* s, int fid, uint64_t t0, uint64_t t1) {
  if (!s->functions[static_cast<size_t>(fid)].wanted || !in_window(s, t0))
    return;
  record* r = s->buffer->append();
  if (r == nullptr)
    return;
  *r = record{};
  r->t_enter = t0;
  r->t_leave = t1;
  r->call_site = reinterpret_cast<uint64_t>(s->host->call_site());
  r->id = record::make_id(record_kind::mpi_call, static_cast<uint32_t>(fid));
  r->peer = STRATA_NO_RANK;
  r->tag = STRATA_NO_TAG;
  r->source = STRATA_NO_RANK;
  r->recv_tag = STRATA_NO_TAG;
  r->root = STRATA_NO_RANK;
}

void record_completed(trace_state* s, int fid, uint64_t t0, uint64_t t1, uint64_t handle,
                      const MPI_Status* status) {
  pending_request p;
  if (!take_request(s, handle, p))
    return;
  if (!s->functions[static_cast<size_t>(fid)].wanted || !in_window(s, t0))
    return;
  record* r = s->buffer->append();
  if (r == nullptr)
    return;
  *r = record{};
  r->t_enter = t1;
  r->t_leave = t1;
  r->request = p.id;
  r->comm = p.comm;
  r->id = record::make_id(p.recv ? record_kind::recv_complete : record_kind::send_complete, 0);
  r->source = STRATA_NO_RANK;
  r->recv_tag = STRATA_NO_TAG;
  if (p.recv && status != nullptr) {
    int count = 0;
    if (PMPI_Get_count(status, MPI_BYTE, &count) == MPI_SUCCESS && count != MPI_UNDEFINED)
      r->bytes_received = count;
    r->source = status->MPI_SOURCE;
    r->recv_tag = status->MPI_TAG;
  }
}

int fid_of(trace_state* s, const char* name) {
  return s->host->function_id(name);
}

} // namespace
} // namespace strata::trace

using strata::trace::g_state;
using strata::trace::tracing_now;

#define STRATA_TRACE_FID(name) static const int fid = strata::trace::fid_of(g_state, name);

extern "C" STRATA_MODULE_EXPORT int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  auto* s = g_state;
  if (!tracing_now(s))
    return ZMPI_Wait(request, status);
  STRATA_TRACE_FID("MPI_Wait");
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  const uint64_t handle = strata::trace::request_bits(*request);
  const uint64_t t0 = s->host->now_ns();
  const int rc = ZMPI_Wait(request, st);
  const uint64_t t1 = s->host->now_ns();
  strata::trace::record_completion_call(s, fid, t0, t1);
  if (rc == MPI_SUCCESS)
    strata::trace::record_completed(s, fid, t0, t1, handle, st);
  return rc;
}

extern "C" STRATA_MODULE_EXPORT int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  auto* s = g_state;
  if (!tracing_now(s))
    return ZMPI_Test(request, flag, status);
  STRATA_TRACE_FID("MPI_Test");
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  const uint64_t handle = strata::trace::request_bits(*request);
  const uint64_t t0 = s->host->now_ns();
  const int rc = ZMPI_Test(request, flag, st);
  const uint64_t t1 = s->host->now_ns();
  strata::trace::record_completion_call(s, fid, t0, t1);
  if (rc == MPI_SUCCESS && *flag)
    strata::trace::record_completed(s, fid, t0, t1, handle, st);
  return rc;
}

namespace {
using strata::trace::scratch;

// Snapshots the handles before MPI frees them, times the call, then records it and the requests
// it completed: `completed(st)` returns how many, their indices and their statuses.
template <typename Call, typename Completed>
int traced_completion(const char* name, int count, MPI_Request* requests, Call call,
                      Completed completed) {
  auto* s = g_state;
  const int fid = s->host->function_id(name);
  auto& sc = scratch(static_cast<size_t>(std::max(count, 0)));
  for (int i = 0; i < count; ++i)
    sc.handles[static_cast<size_t>(i)] = strata::trace::request_bits(requests[i]);
  const uint64_t t0 = s->host->now_ns();
  const int rc = call();
  const uint64_t t1 = s->host->now_ns();
  strata::trace::record_completion_call(s, fid, t0, t1);
  if (rc == MPI_SUCCESS)
    completed([&](int index, const MPI_Status* status) {
      if (index >= 0 && index < count)
        strata::trace::record_completed(s, fid, t0, t1, sc.handles[static_cast<size_t>(index)],
                                        status);
    });
  return rc;
}

MPI_Status* statuses_or_scratch(MPI_Status* statuses, int count) {
  return statuses == MPI_STATUSES_IGNORE
             ? scratch(static_cast<size_t>(std::max(count, 0))).statuses.data()
             : statuses;
}
} // namespace

extern "C" STRATA_MODULE_EXPORT int MPI_Waitall(int count, MPI_Request requests[],
                                                MPI_Status statuses[]) {
  if (!tracing_now(g_state))
    return ZMPI_Waitall(count, requests, statuses);
  MPI_Status* st = statuses_or_scratch(statuses, count);
  return traced_completion(
      "MPI_Waitall", count, requests, [&] { return ZMPI_Waitall(count, requests, st); },
      [&](auto each) {
        for (int i = 0; i < count; ++i)
          each(i, &st[i]);
      });
}

extern "C" STRATA_MODULE_EXPORT int MPI_Testall(int count, MPI_Request requests[], int* flag,
                                                MPI_Status statuses[]) {
  if (!tracing_now(g_state))
    return ZMPI_Testall(count, requests, flag, statuses);
  MPI_Status* st = statuses_or_scratch(statuses, count);
  return traced_completion(
      "MPI_Testall", count, requests, [&] { return ZMPI_Testall(count, requests, flag, st); },
      [&](auto each) {
        for (int i = 0; *flag && i < count; ++i)
          each(i, &st[i]);
      });
}

// The parameter names differ between the two MPIs' headers.
// NOLINTNEXTLINE(readability-inconsistent-declaration-parameter-name)
extern "C" STRATA_MODULE_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int* index,
                                                MPI_Status* status) {
  if (!tracing_now(g_state))
    return ZMPI_Waitany(count, requests, index, status);
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  return traced_completion(
      "MPI_Waitany", count, requests, [&] { return ZMPI_Waitany(count, requests, index, st); },
      [&](auto each) {
        if (*index != MPI_UNDEFINED)
          each(*index, st);
      });
}

// The parameter names differ between the two MPIs' headers.
// NOLINTNEXTLINE(readability-inconsistent-declaration-parameter-name)
extern "C" STRATA_MODULE_EXPORT int MPI_Testany(int count, MPI_Request requests[], int* index,
                                                int* flag, MPI_Status* status) {
  if (!tracing_now(g_state))
    return ZMPI_Testany(count, requests, index, flag, status);
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  return traced_completion(
      "MPI_Testany", count, requests,
      [&] { return ZMPI_Testany(count, requests, index, flag, st); },
      [&](auto each) {
        if (*flag && *index != MPI_UNDEFINED)
          each(*index, st);
      });
}

extern "C" STRATA_MODULE_EXPORT int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount,
                                                 int indices[], MPI_Status statuses[]) {
  if (!tracing_now(g_state))
    return ZMPI_Waitsome(incount, requests, outcount, indices, statuses);
  MPI_Status* st = statuses_or_scratch(statuses, incount);
  return traced_completion(
      "MPI_Waitsome", incount, requests,
      [&] { return ZMPI_Waitsome(incount, requests, outcount, indices, st); },
      [&](auto each) {
        for (int k = 0; *outcount != MPI_UNDEFINED && k < *outcount; ++k)
          each(indices[k], &st[k]);
      });
}

extern "C" STRATA_MODULE_EXPORT int MPI_Testsome(int incount, MPI_Request requests[], int* outcount,
                                                 int indices[], MPI_Status statuses[]) {
  if (!tracing_now(g_state))
    return ZMPI_Testsome(incount, requests, outcount, indices, statuses);
  MPI_Status* st = statuses_or_scratch(statuses, incount);
  return traced_completion(
      "MPI_Testsome", incount, requests,
      [&] { return ZMPI_Testsome(incount, requests, outcount, indices, st); },
      [&](auto each) {
        for (int k = 0; *outcount != MPI_UNDEFINED && k < *outcount; ++k)
          each(indices[k], &st[k]);
      });
}

// ---- set-up, clocks, and the archive at finalize ---------------------------------------------
namespace strata::trace {
namespace {

fn_info classify(const std::string& full_name) {
  std::string name = full_name;
  if (name.size() > 2 && name.compare(name.size() - 2, 2, "_c") == 0)
    name.resize(name.size() - 2); // large-count twins
  static const std::map<std::string, fn_class> p2p = {
      {"MPI_Send", fn_class::send},           {"MPI_Bsend", fn_class::send},
      {"MPI_Ssend", fn_class::send},          {"MPI_Rsend", fn_class::send},
      {"MPI_Isend", fn_class::isend},         {"MPI_Ibsend", fn_class::isend},
      {"MPI_Issend", fn_class::isend},        {"MPI_Irsend", fn_class::isend},
      {"MPI_Recv", fn_class::recv},           {"MPI_Irecv", fn_class::irecv},
      {"MPI_Sendrecv", fn_class::sendrecv},   {"MPI_Sendrecv_replace", fn_class::sendrecv},
      {"MPI_Wait", fn_class::completion},     {"MPI_Waitall", fn_class::completion},
      {"MPI_Waitany", fn_class::completion},  {"MPI_Waitsome", fn_class::completion},
      {"MPI_Test", fn_class::completion},     {"MPI_Testall", fn_class::completion},
      {"MPI_Testany", fn_class::completion},  {"MPI_Testsome", fn_class::completion},
      {"MPI_Probe", fn_class::p2p_other},     {"MPI_Iprobe", fn_class::p2p_other},
      {"MPI_Start", fn_class::p2p_other},     {"MPI_Startall", fn_class::p2p_other},
      {"MPI_Send_init", fn_class::p2p_other}, {"MPI_Recv_init", fn_class::p2p_other},
      {"MPI_Cancel", fn_class::p2p_other},    {"MPI_Request_free", fn_class::p2p_other}};
  static const std::map<std::string, OTF2_CollectiveOp> collectives = {
      {"MPI_Barrier", OTF2_COLLECTIVE_OP_BARRIER},
      {"MPI_Bcast", OTF2_COLLECTIVE_OP_BCAST},
      {"MPI_Gather", OTF2_COLLECTIVE_OP_GATHER},
      {"MPI_Gatherv", OTF2_COLLECTIVE_OP_GATHERV},
      {"MPI_Scatter", OTF2_COLLECTIVE_OP_SCATTER},
      {"MPI_Scatterv", OTF2_COLLECTIVE_OP_SCATTERV},
      {"MPI_Allgather", OTF2_COLLECTIVE_OP_ALLGATHER},
      {"MPI_Allgatherv", OTF2_COLLECTIVE_OP_ALLGATHERV},
      {"MPI_Alltoall", OTF2_COLLECTIVE_OP_ALLTOALL},
      {"MPI_Alltoallv", OTF2_COLLECTIVE_OP_ALLTOALLV},
      {"MPI_Alltoallw", OTF2_COLLECTIVE_OP_ALLTOALLW},
      {"MPI_Allreduce", OTF2_COLLECTIVE_OP_ALLREDUCE},
      {"MPI_Reduce", OTF2_COLLECTIVE_OP_REDUCE},
      {"MPI_Reduce_scatter", OTF2_COLLECTIVE_OP_REDUCE_SCATTER},
      {"MPI_Reduce_scatter_block", OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK},
      {"MPI_Scan", OTF2_COLLECTIVE_OP_SCAN},
      {"MPI_Exscan", OTF2_COLLECTIVE_OP_EXSCAN}};
  fn_info info;
  if (auto it = p2p.find(name); it != p2p.end())
    info.cls = it->second;
  else if (auto c = collectives.find(name); c != collectives.end()) {
    info.cls = fn_class::collective;
    info.op = c->second;
  }
  return info;
}

OTF2_RegionRole role_of(const fn_info& f) {
  switch (f.cls) {
  case fn_class::collective: // as Score-P classifies them
    switch (f.op) {
    case OTF2_COLLECTIVE_OP_BARRIER:
      return OTF2_REGION_ROLE_BARRIER;
    case OTF2_COLLECTIVE_OP_BCAST:
    case OTF2_COLLECTIVE_OP_SCATTER:
    case OTF2_COLLECTIVE_OP_SCATTERV:
      return OTF2_REGION_ROLE_COLL_ONE2ALL;
    case OTF2_COLLECTIVE_OP_GATHER:
    case OTF2_COLLECTIVE_OP_GATHERV:
    case OTF2_COLLECTIVE_OP_REDUCE:
      return OTF2_REGION_ROLE_COLL_ALL2ONE;
    case OTF2_COLLECTIVE_OP_SCAN:
    case OTF2_COLLECTIVE_OP_EXSCAN:
      return OTF2_REGION_ROLE_COLL_OTHER;
    default:
      return OTF2_REGION_ROLE_COLL_ALL2ALL;
    }
  case fn_class::other:
    return OTF2_REGION_ROLE_FUNCTION;
  default:
    return OTF2_REGION_ROLE_POINT2POINT;
  }
}

int trace_load(const strata_host* host, int self, const strata_module_arg* args, int nargs,
               void** state, char* error, size_t error_size) {
  auto s = std::make_unique<trace_state>();
  s->host = host;
  s->self = self;
  std::vector<std::pair<std::string, std::string>> arg_list;
  arg_list.reserve(static_cast<size_t>(std::max(nargs, 0)));
  for (int i = 0; i < nargs; ++i)
    arg_list.emplace_back(args[i].key, args[i].value != nullptr ? args[i].value : "");
  if (std::string why = parse_options(
          arg_list, [](const char* n) { return std::getenv(n); }, s->opt);
      !why.empty()) {
    std::snprintf(error, error_size, "%s", why.c_str());
    return 1;
  }
  const int count = host->function_count();
  s->functions.resize(static_cast<size_t>(count));
  for (int fid = 0; fid < count; ++fid)
    s->functions[static_cast<size_t>(fid)] = classify(host->function_name(fid));
  // The completion functions are wrapped whatever the filter says; they record only if wanted.
  if (host->subscribe(self, s->opt.functions.c_str()) == 0) {
    std::snprintf(error, error_size, "functions=%s matches no MPI function",
                  s->opt.functions.c_str());
    return 1;
  }
  for (int fid = 0; fid < count; ++fid) {
    const char* name = host->function_name(fid);
    std::string_view rest(s->opt.functions);
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string glob(rest.substr(0, comma));
      if (!glob.empty() && ::fnmatch(glob.c_str(), name, 0) == 0)
        s->functions[static_cast<size_t>(fid)].wanted = true;
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  s->buffer =
      std::make_unique<event_buffer>(s->opt.limit_bytes, s->opt.policy, s->opt.prefault_bytes);
  s->comm_index.resize(64, 0);
  s->open_regions.reserve(256);
  s->region_names.reserve(64);
  s->traced_thread = pthread_self(); // load runs on the thread that calls MPI_Init
  g_state = s.get();
  *state = s.release();
  return 0;
}

// Rank 0's clock minus ours, from the ping-pong with the smallest round trip; the half round
// trip is the uncertainty.
int64_t measure_offset(trace_state* s, double& uncertainty) {
  constexpr int rounds = 8;
  int64_t best_offset = 0;
  uint64_t best_rtt = std::numeric_limits<uint64_t>::max();
  const MPI_Comm comm = s->clock_comm;
  MPI_Barrier(comm);
  for (int peer = 1; peer < s->world_size; ++peer) {
    for (int k = 0; k < rounds; ++k) {
      uint64_t t = 0;
      if (s->rank == 0) {
        MPI_Recv(&t, 1, MPI_UINT64_T, peer, 1, comm, MPI_STATUS_IGNORE);
        t = s->host->now_ns();
        MPI_Send(&t, 1, MPI_UINT64_T, peer, 2, comm);
      } else if (s->rank == peer) {
        const uint64_t sent = s->host->now_ns();
        MPI_Send(&t, 1, MPI_UINT64_T, 0, 1, comm);
        MPI_Recv(&t, 1, MPI_UINT64_T, 0, 2, comm, MPI_STATUS_IGNORE);
        const uint64_t back = s->host->now_ns();
        if (back - sent < best_rtt) {
          best_rtt = back - sent;
          best_offset = static_cast<int64_t>(t) - static_cast<int64_t>(sent + (back - sent) / 2);
        }
      }
    }
  }
  uncertainty = s->rank == 0 ? 0.0 : static_cast<double>(best_rtt) / 2;
  return s->rank == 0 ? 0 : best_offset;
}

void trace_mpi_ready(void* raw) {
  auto* s = static_cast<trace_state*>(raw);
  // The application's processes, private to the tools (strata_host::world).
  s->world = *static_cast<const MPI_Comm*>(s->host->world());
  MPI_Comm_rank(s->world, &s->rank);
  MPI_Comm_size(s->world, &s->world_size);
  s->init_mono = s->host->now_ns();
  s->init_real = realtime_ns();
  if (s->opt.start_s > 0)
    s->window_begin = s->init_mono + static_cast<uint64_t>(s->opt.start_s * 1e9);
  if (s->opt.stop_s >= 0)
    s->window_end = s->init_mono + static_cast<uint64_t>(s->opt.stop_s * 1e9);
  // One directory for the job: the resource manager's id, else rank 0's start time and pid.
  char dir[4096] = {0};
  if (s->rank == 0) {
    std::string d = s->opt.dir;
    if (d.empty()) {
      std::string job = job_id_from_environment([](const char* n) { return std::getenv(n); });
      if (job.empty()) {
        char stamp[32];
        const time_t now = ::time(nullptr);
        tm local{};
        ::localtime_r(&now, &local);
        std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
        job = std::string(stamp) + "-" + std::to_string(::getpid());
      }
      d = default_trace_dir(job);
    }
    std::snprintf(dir, sizeof(dir), "%s", d.c_str());
  }
  MPI_Bcast(dir, sizeof(dir), MPI_CHAR, 0, s->world);
  s->dir = dir;
  // The ping-pongs get their own communicator: they can never match the program's receives.
  MPI_Comm_dup(s->world, &s->clock_comm);
  s->clock.t1 = s->host->now_ns();
  s->clock.o1 = measure_offset(s, s->stddev_init);
}

// ---- writing --------------------------------------------------------------------------------

OTF2_FlushType pre_flush(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) {
  return OTF2_FLUSH;
}
OTF2_TimeStamp post_flush(void*, OTF2_FileType, OTF2_LocationRef) {
  return 0;
}
OTF2_FlushCallbacks flush_callbacks = {pre_flush, post_flush};

// Bytes moved between ranks with MPI, as a vector of strings (rank 0 gets all, others none).
std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine, int rank,
                                        int size) {
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<size_t>(size));
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm);
  std::vector<int> displs(static_cast<size_t>(size), 0);
  size_t total = 0;
  for (int r = 0; r < size; ++r) {
    displs[static_cast<size_t>(r)] = static_cast<int>(total);
    total += static_cast<size_t>(lengths[static_cast<size_t>(r)]);
  }
  std::string all(rank == 0 ? total : 0, '\0');
  MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), displs.data(), MPI_CHAR, 0,
              comm);
  std::vector<std::string> out;
  if (rank == 0)
    for (int r = 0; r < size; ++r)
      out.push_back(all.substr(static_cast<size_t>(displs[static_cast<size_t>(r)]),
                               static_cast<size_t>(lengths[static_cast<size_t>(r)])));
  return out;
}

std::vector<uint32_t> scatter_maps(MPI_Comm comm, const std::vector<std::vector<uint32_t>>& flat,
                                   int rank, int size) {
  std::vector<int> lengths(static_cast<size_t>(size), 0);
  std::vector<int> displs(static_cast<size_t>(size), 0);
  std::vector<uint32_t> all;
  if (rank == 0)
    for (int r = 0; r < size; ++r) {
      lengths[static_cast<size_t>(r)] = static_cast<int>(flat[static_cast<size_t>(r)].size());
      displs[static_cast<size_t>(r)] = static_cast<int>(all.size());
      all.insert(all.end(), flat[static_cast<size_t>(r)].begin(),
                 flat[static_cast<size_t>(r)].end());
    }
  int mine = 0;
  MPI_Scatter(lengths.data(), 1, MPI_INT, &mine, 1, MPI_INT, 0, comm);
  std::vector<uint32_t> out(static_cast<size_t>(mine));
  MPI_Scatterv(all.data(), lengths.data(), displs.data(), MPI_UINT32_T, out.data(), mine,
               MPI_UINT32_T, 0, comm);
  return out;
}

// What this rank's records refer to, by local index, and the raw -> local index maps.
struct local_index {
  local_defs defs;
  std::vector<int32_t> mpi_region_of_fid;                // -1 = unused
  std::unordered_map<uint64_t, int32_t> site_of_address; // -1 = unknown place
};

local_index collect_local(trace_state* s) {
  local_index li;
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  li.defs.host = host;
  li.mpi_region_of_fid.assign(s->functions.size(), -1);
  std::vector<uint64_t> addresses;
  s->buffer->for_each([&](const record& r) {
    if (r.kind() == record_kind::mpi_call && li.mpi_region_of_fid[r.index()] < 0) {
      li.mpi_region_of_fid[r.index()] = static_cast<int32_t>(li.defs.mpi_regions.size());
      li.defs.mpi_regions.emplace_back(s->host->function_name(static_cast<int>(r.index())));
    }
    if (r.call_site != 0 && li.site_of_address.emplace(r.call_site, -1).second)
      addresses.push_back(r.call_site);
  });
  li.defs.user_regions = s->region_names;
  const std::vector<common::source_location> places =
      common::resolve_return_addresses(addresses, "strata/annotate.h");
  std::map<std::pair<std::string, int>, int32_t> site_index;
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (places[i].line <= 0)
      continue; // no line information: the Enter goes without a call site
    auto [it, added] = site_index.emplace(std::make_pair(places[i].file, places[i].line),
                                          static_cast<int32_t>(li.defs.sites.size()));
    if (added)
      li.defs.sites.push_back({places[i].file, static_cast<uint32_t>(places[i].line)});
    li.site_of_address[addresses[i]] = it->second;
  }
  li.defs.comms.assign(s->comm_members.begin() + 1, s->comm_members.end());
  return li;
}

// Writes this rank's records as OTF2 events with global ids. Returns the number of events.
struct event_writer {
  trace_state* s;
  OTF2_EvtWriter* w;
  const local_index& li;
  const rank_map& map;
  OTF2_AttributeList* attributes = nullptr;
  uint64_t events = 0;
  std::vector<std::unordered_map<int, uint32_t>> comm_rank_of_world; // by local comm index
  std::vector<uint32_t> open_regions;                                // global ids
  bool pending_leave = false;
  uint64_t pending_time = 0;
  uint32_t pending_region = 0;
  std::vector<bool> request_started; // requests whose Isend/Irecv is in the archive
  uint64_t last_time = 0;

  ~event_writer() { OTF2_AttributeList_Delete(attributes); }

  uint64_t at(uint64_t t) {
    // Corrected, and never before the previous event (the correction is not perfectly monotone
    // across a clock step, and readers expect order).
    last_time = std::max(last_time, s->clock.correct(t));
    return last_time;
  }

  uint32_t comm_rank(uint32_t comm, int world) {
    if (comm == 0 || world < 0)
      return OTF2_UNDEFINED_UINT32;
    if (comm_rank_of_world.empty())
      comm_rank_of_world.resize(s->comm_members.size());
    auto& table = comm_rank_of_world[comm];
    if (table.empty()) {
      const auto& members = s->comm_members[comm];
      for (size_t r = 0; r < members.size(); ++r)
        table.emplace(members[r], static_cast<uint32_t>(r));
    }
    auto it = table.find(world);
    return it == table.end() ? OTF2_UNDEFINED_UINT32 : it->second;
  }

  OTF2_CommRef global_comm(uint32_t comm) const {
    return comm == 0 || comm > map.comm.size() ? OTF2_UNDEFINED_COMM : map.comm[comm - 1];
  }

  void call_site(uint64_t address) {
    if (address == 0)
      return;
    auto it = li.site_of_address.find(address);
    if (it != li.site_of_address.end() && it->second >= 0)
      OTF2_AttributeList_AddSourceCodeLocationRef(attributes, 0,
                                                  map.site[static_cast<size_t>(it->second)]);
  }

  void flush_leave() {
    if (pending_leave) {
      OTF2_EvtWriter_Leave(w, nullptr, at(pending_time), pending_region);
      ++events;
      pending_leave = false;
    }
  }

  bool started(uint32_t request) const {
    return request < request_started.size() && request_started[request];
  }
  void start(uint32_t request) {
    if (request >= request_started.size())
      request_started.resize(std::max<size_t>(request + 1, request_started.size() * 2), false);
    request_started[request] = true;
  }

  void write(const record& r) {
    switch (r.kind()) {
    case record_kind::send_complete:
    case record_kind::recv_complete:
      if (!pending_leave || !started(r.request))
        return; // its call or its start fell out of a ring buffer
      if (r.kind() == record_kind::send_complete) {
        OTF2_EvtWriter_MpiIsendComplete(w, nullptr, at(r.t_enter), r.request);
      } else {
        OTF2_EvtWriter_MpiIrecv(w, nullptr, at(r.t_enter), static_cast<uint32_t>(r.source),
                                global_comm(r.comm), static_cast<uint32_t>(r.recv_tag),
                                static_cast<uint64_t>(std::max<int64_t>(r.bytes_received, 0)),
                                r.request);
      }
      ++events;
      return;
    case record_kind::region_enter: {
      flush_leave();
      const uint32_t region = map.user_region[r.index()];
      call_site(r.call_site);
      OTF2_EvtWriter_Enter(w, attributes, at(r.t_enter), region);
      ++events;
      open_regions.push_back(region);
      return;
    }
    case record_kind::region_leave: {
      flush_leave();
      const uint32_t region = map.user_region[r.index()];
      if (open_regions.empty() || open_regions.back() != region)
        return; // its enter fell out of a ring buffer
      open_regions.pop_back();
      OTF2_EvtWriter_Leave(w, nullptr, at(r.t_enter), region);
      ++events;
      return;
    }
    case record_kind::mpi_call:
      break;
    default:
      return;
    }
    flush_leave();
    const fn_info& f = s->functions[r.index()];
    const uint32_t region = map.mpi_region[static_cast<size_t>(li.mpi_region_of_fid[r.index()])];
    const OTF2_CommRef comm = global_comm(r.comm);
    call_site(r.call_site);
    OTF2_EvtWriter_Enter(w, attributes, at(r.t_enter), region);
    ++events;
    const bool has_comm = comm != OTF2_UNDEFINED_COMM;
    const uint32_t peer = comm_rank(r.comm, r.peer);
    const bool sends = has_comm && peer != OTF2_UNDEFINED_UINT32;
    const bool receives = has_comm && r.source >= 0;
    switch (f.cls) {
    case fn_class::send:
      if (sends) {
        OTF2_EvtWriter_MpiSend(w, nullptr, at(r.t_enter), peer, comm, static_cast<uint32_t>(r.tag),
                               static_cast<uint64_t>(r.bytes_sent));
        ++events;
      }
      break;
    case fn_class::isend:
      if (sends && r.request != 0) {
        OTF2_EvtWriter_MpiIsend(w, nullptr, at(r.t_enter), peer, comm, static_cast<uint32_t>(r.tag),
                                static_cast<uint64_t>(r.bytes_sent), r.request);
        start(r.request);
        ++events;
      }
      break;
    case fn_class::irecv: // from MPI_PROC_NULL: no message, so no request records either
      if (has_comm && r.request != 0 && r.peer != STRATA_PROC_NULL_RANK) {
        OTF2_EvtWriter_MpiIrecvRequest(w, nullptr, at(r.t_leave), r.request);
        start(r.request);
        ++events;
      }
      break;
    case fn_class::recv:
      if (receives) {
        OTF2_EvtWriter_MpiRecv(w, nullptr, at(r.t_leave), static_cast<uint32_t>(r.source), comm,
                               static_cast<uint32_t>(r.recv_tag),
                               static_cast<uint64_t>(std::max<int64_t>(r.bytes_received, 0)));
        ++events;
      }
      break;
    case fn_class::sendrecv:
      if (sends) {
        OTF2_EvtWriter_MpiSend(w, nullptr, at(r.t_enter), peer, comm, static_cast<uint32_t>(r.tag),
                               static_cast<uint64_t>(r.bytes_sent));
        ++events;
      }
      if (receives) {
        OTF2_EvtWriter_MpiRecv(w, nullptr, at(r.t_leave), static_cast<uint32_t>(r.source), comm,
                               static_cast<uint32_t>(r.recv_tag),
                               static_cast<uint64_t>(std::max<int64_t>(r.bytes_received, 0)));
        ++events;
      }
      break;
    case fn_class::collective:
      if (has_comm) {
        OTF2_EvtWriter_MpiCollectiveBegin(w, nullptr, at(r.t_enter));
        OTF2_EvtWriter_MpiCollectiveEnd(
            w, nullptr, at(r.t_leave), f.op, comm, comm_rank(r.comm, r.root),
            static_cast<uint64_t>(std::max<int64_t>(r.bytes_sent, 0)),
            static_cast<uint64_t>(std::max<int64_t>(r.bytes_received, 0)));
        events += 2;
      }
      break;
    default:
      break;
    }
    pending_leave = true;
    pending_time = r.t_leave;
    pending_region = region;
  }

  void finish() {
    flush_leave();
    // Regions still open (the program ended inside them, or their leave was not kept) close at
    // the last event, so the archive nests.
    while (!open_regions.empty()) {
      OTF2_EvtWriter_Leave(w, nullptr, last_time, open_regions.back());
      open_regions.pop_back();
      ++events;
    }
  }
};

} // namespace
} // namespace strata::trace

namespace strata::trace {
namespace {

struct rank_figures {
  uint64_t events = 0;
  uint64_t dropped = 0;
  uint64_t first = 0;
  uint64_t last = 0;
  int64_t offset_init = 0;
  int64_t offset_final = 0;
};
static_assert(sizeof(rank_figures) == 6 * sizeof(uint64_t));

struct string_table {
  std::map<std::string, OTF2_StringRef> index;
  std::vector<std::string> list;
  OTF2_StringRef operator()(const std::string& text) {
    auto [it, added] = index.emplace(text, static_cast<OTF2_StringRef>(list.size()));
    if (added)
      list.push_back(text);
    return it->second;
  }
};

void write_global_defs(OTF2_Archive* archive, const trace_state* s, const global_defs& g,
                       const std::vector<rank_figures>& ranks,
                       const std::vector<fn_info>& mpi_info) {
  OTF2_GlobalDefWriter* w = OTF2_Archive_GetGlobalDefWriter(archive);
  uint64_t first = std::numeric_limits<uint64_t>::max();
  uint64_t last = 0;
  for (const rank_figures& r : ranks)
    if (r.events > 0) {
      first = std::min(first, r.first);
      last = std::max(last, r.last);
    }
  if (first > last)
    first = last = s->clock.correct(s->init_mono);
  const uint64_t realtime = s->init_real - (s->init_mono - first); // rank 0 defines the clock
  OTF2_GlobalDefWriter_WriteClockProperties(w, 1000000000u, first, last - first + 1, realtime);

  // Strings first (everything refers to them), then the definitions that use them.
  string_table str;
  str("");
  const OTF2_StringRef mpi_name = str("MPI");
  const OTF2_StringRef user_name = str("user");
  const OTF2_StringRef site_name = str("strata:call_site");
  const OTF2_StringRef site_doc = str("where the program entered the region (file, line)");
  std::vector<OTF2_StringRef> rank_names;
  for (size_t r = 0; r < ranks.size(); ++r)
    rank_names.push_back(str("rank " + std::to_string(r)));
  const OTF2_StringRef machine = str("machine");
  const OTF2_StringRef node = str("node");
  std::vector<OTF2_StringRef> host_names;
  for (const std::string& h : g.hosts)
    host_names.push_back(str(h));
  std::vector<OTF2_StringRef> region_names;
  for (const std::string& name : g.mpi_regions)
    region_names.push_back(str(name));
  for (const std::string& name : g.user_regions)
    region_names.push_back(str(name));
  std::vector<OTF2_StringRef> site_files;
  for (const source_site& site : g.sites)
    site_files.push_back(str(site.file));
  std::vector<OTF2_StringRef> comm_names;
  for (size_t c = 0; c < g.comms.size(); ++c) {
    bool world = g.comms[c].size() == ranks.size();
    for (size_t r = 0; world && r < g.comms[c].size(); ++r)
      world = g.comms[c][r] == static_cast<int>(r);
    comm_names.push_back(
        str(world ? (c == 0 || comm_names.empty() ? "MPI_COMM_WORLD" : "comm " + std::to_string(c))
                  : "comm " + std::to_string(c)));
  }
  const OTF2_StringRef locations_name = str("MPI locations");
  const OTF2_StringRef dropped_name = str("strata:dropped_events");
  const OTF2_StringRef offset_init_name = str("strata:clock_offset_init_ns");
  const OTF2_StringRef offset_final_name = str("strata:clock_offset_finalize_ns");
  for (size_t i = 0; i < str.list.size(); ++i)
    OTF2_GlobalDefWriter_WriteString(w, static_cast<OTF2_StringRef>(i), str.list[i].c_str());

  OTF2_GlobalDefWriter_WriteParadigm(w, OTF2_PARADIGM_MPI, mpi_name, OTF2_PARADIGM_CLASS_PROCESS);
  OTF2_GlobalDefWriter_WriteParadigm(w, OTF2_PARADIGM_USER, user_name, OTF2_PARADIGM_CLASS_PROCESS);
  OTF2_GlobalDefWriter_WriteAttribute(w, 0, site_name, site_doc, OTF2_TYPE_SOURCE_CODE_LOCATION);
  OTF2_GlobalDefWriter_WriteSystemTreeNode(w, 0, machine, machine, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
  for (size_t h = 0; h < g.hosts.size(); ++h)
    OTF2_GlobalDefWriter_WriteSystemTreeNode(w, static_cast<OTF2_SystemTreeNodeRef>(h + 1),
                                             host_names[h], node, 0);
  for (size_t r = 0; r < ranks.size(); ++r)
    OTF2_GlobalDefWriter_WriteLocationGroup(
        w, static_cast<OTF2_LocationGroupRef>(r), rank_names[r], OTF2_LOCATION_GROUP_TYPE_PROCESS,
        static_cast<OTF2_SystemTreeNodeRef>(g.rank_host[r] + 1), OTF2_UNDEFINED_LOCATION_GROUP);
  for (size_t r = 0; r < ranks.size(); ++r)
    OTF2_GlobalDefWriter_WriteLocation(w, static_cast<OTF2_LocationRef>(r), rank_names[r],
                                       OTF2_LOCATION_TYPE_CPU_THREAD, ranks[r].events,
                                       static_cast<OTF2_LocationGroupRef>(r));
  for (size_t i = 0; i < g.mpi_regions.size(); ++i)
    OTF2_GlobalDefWriter_WriteRegion(
        w, static_cast<OTF2_RegionRef>(i), region_names[i], region_names[i], str.index.at(""),
        role_of(mpi_info[i]), OTF2_PARADIGM_MPI, OTF2_REGION_FLAG_NONE, str.index.at(""), 0, 0);
  for (size_t i = 0; i < g.user_regions.size(); ++i) {
    const size_t id = g.mpi_regions.size() + i;
    OTF2_GlobalDefWriter_WriteRegion(w, static_cast<OTF2_RegionRef>(id), region_names[id],
                                     region_names[id], str.index.at(""), OTF2_REGION_ROLE_FUNCTION,
                                     OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE, str.index.at(""), 0,
                                     0);
  }
  for (size_t i = 0; i < g.sites.size(); ++i)
    OTF2_GlobalDefWriter_WriteSourceCodeLocation(w, static_cast<OTF2_SourceCodeLocationRef>(i),
                                                 site_files[i], g.sites[i].line);
  // Group 0: the MPI locations (world rank r = location r); group c+1: communicator c's members
  // as world ranks, i.e. indices into group 0.
  std::vector<uint64_t> members;
  for (size_t r = 0; r < ranks.size(); ++r)
    members.push_back(r);
  OTF2_GlobalDefWriter_WriteGroup(w, 0, locations_name, OTF2_GROUP_TYPE_COMM_LOCATIONS,
                                  OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                  static_cast<uint32_t>(members.size()), members.data());
  for (size_t c = 0; c < g.comms.size(); ++c) {
    members.assign(g.comms[c].begin(), g.comms[c].end());
    OTF2_GlobalDefWriter_WriteGroup(w, static_cast<OTF2_GroupRef>(c + 1), comm_names[c],
                                    OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, static_cast<uint32_t>(members.size()),
                                    members.data());
    OTF2_GlobalDefWriter_WriteComm(w, static_cast<OTF2_CommRef>(c), comm_names[c],
                                   static_cast<OTF2_GroupRef>(c + 1), OTF2_UNDEFINED_COMM,
                                   OTF2_COMM_FLAG_NONE);
  }
  for (size_t r = 0; r < ranks.size(); ++r) {
    OTF2_AttributeValue v;
    v.uint64 = ranks[r].dropped;
    OTF2_GlobalDefWriter_WriteLocationProperty(w, static_cast<OTF2_LocationRef>(r), dropped_name,
                                               OTF2_TYPE_UINT64, v);
    v.int64 = ranks[r].offset_init;
    OTF2_GlobalDefWriter_WriteLocationProperty(w, static_cast<OTF2_LocationRef>(r),
                                               offset_init_name, OTF2_TYPE_INT64, v);
    v.int64 = ranks[r].offset_final;
    OTF2_GlobalDefWriter_WriteLocationProperty(w, static_cast<OTF2_LocationRef>(r),
                                               offset_final_name, OTF2_TYPE_INT64, v);
  }
}

// Creates the trace directory, or empties an earlier archive out of it (only the files OTF2 writes
// under the name `traces`). Returns why it cannot be used, empty when it can.
std::string prepare_directory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return "cannot create " + dir + ": " + ec.message();
  for (const char* old : {"traces.otf2", "traces.def", "traces"}) {
    fs::remove_all(fs::path(dir) / old, ec);
    if (ec)
      return "cannot replace the earlier trace in " + dir + ": " + ec.message();
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return dir + " is not writable";
  return {};
}

void trace_finalize(void* raw) {
  auto* s = static_cast<trace_state*>(raw);
  s->traced_thread = 0;
  s->clock.t2 = s->host->now_ns();
  s->clock.o2 = measure_offset(s, s->stddev_final);
  MPI_Comm_free(&s->clock_comm);
  const int rank = s->rank;
  const int size = s->world_size;

  // Definitions: local -> rank 0 -> unified -> each rank's map back.
  local_index li = collect_local(s);
  const std::vector<std::string> all = gather_strings(s->world, serialize(li.defs), rank, size);
  global_defs g;
  std::vector<std::vector<uint32_t>> flat;
  std::vector<fn_info> mpi_info;
  if (rank == 0) {
    std::vector<local_defs> defs(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r)
      if (!deserialize(all[static_cast<size_t>(r)], defs[static_cast<size_t>(r)]))
        s->host->log(s->self, ("rank " + std::to_string(r) +
                               " sent unreadable definitions; its events are left out")
                                  .c_str());
    std::vector<rank_map> maps;
    unify(defs, g, maps);
    for (const rank_map& m : maps)
      flat.push_back(flatten(m));
    for (const std::string& name : g.mpi_regions)
      mpi_info.push_back(classify(name));
  }
  rank_map map;
  const bool mapped = unflatten(scatter_maps(s->world, flat, rank, size), map) &&
                      map.mpi_region.size() == li.defs.mpi_regions.size() &&
                      map.user_region.size() == li.defs.user_regions.size() &&
                      map.site.size() == li.defs.sites.size() &&
                      map.comm.size() == li.defs.comms.size();

  // The directory, checked on rank 0 before OTF2 (which refuses to overwrite and would leave the
  // ranks disagreeing mid-collective).
  int usable = 1;
  if (rank == 0) {
    const std::string why = prepare_directory(s->dir);
    if (!why.empty()) {
      s->host->log(s->self, ("no trace written: " + why).c_str());
      usable = 0;
    }
  }
  MPI_Bcast(&usable, 1, MPI_INT, 0, s->world);
  if (usable == 0)
    return;

  // Events: each rank its own location, through OTF2's MPI collectives.
  OTF2_Archive* archive =
      OTF2_Archive_Open(s->dir.c_str(), "traces", OTF2_FILEMODE_WRITE, uint64_t{1} << 20,
                        uint64_t{4} << 20, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (archive == nullptr) {
    if (rank == 0)
      s->host->log(s->self, ("cannot create the trace in " + s->dir).c_str());
    return;
  }
  OTF2_Archive_SetFlushCallbacks(archive, &flush_callbacks, nullptr);
  OTF2_MPI_Archive_SetCollectiveCallbacks(archive, s->world, MPI_COMM_NULL);
  OTF2_Archive_OpenEvtFiles(archive);
  OTF2_EvtWriter* ew = OTF2_Archive_GetEvtWriter(archive, static_cast<OTF2_LocationRef>(rank));
  rank_figures mine;
  {
    event_writer writer{s, ew, li, map, OTF2_AttributeList_New(), 0, {}, {}, false, 0, 0, {}, 0};
    bool first = true;
    if (mapped)
      s->buffer->for_each([&](const record& r) {
        // MPI_Init is recorded before the window is known.
        if (r.kind() == record_kind::mpi_call && r.t_enter < s->window_begin)
          return;
        const uint64_t before = writer.events;
        writer.write(r);
        if (first && writer.events > before) {
          mine.first = writer.last_time;
          first = false;
        }
      });
    writer.finish();
    mine.events = writer.events;
    mine.last = writer.last_time;
  }
  OTF2_Archive_CloseEvtWriter(archive, ew);
  OTF2_Archive_CloseEvtFiles(archive);
  OTF2_Archive_OpenDefFiles(archive);
  OTF2_DefWriter* dw = OTF2_Archive_GetDefWriter(archive, static_cast<OTF2_LocationRef>(rank));
  // Timestamps are already on rank 0's clock: what is left of the offset is 0, within the
  // measurement's uncertainty (half the best round trip).
  OTF2_DefWriter_WriteClockOffset(dw, s->clock.correct(s->clock.t1), 0, s->stddev_init);
  OTF2_DefWriter_WriteClockOffset(dw, s->clock.correct(s->clock.t2), 0, s->stddev_final);
  OTF2_Archive_CloseDefWriter(archive, dw);
  OTF2_Archive_CloseDefFiles(archive);

  mine.dropped = s->buffer->dropped();
  mine.offset_init = s->clock.o1;
  mine.offset_final = s->clock.o2;
  std::vector<rank_figures> ranks(static_cast<size_t>(rank == 0 ? size : 0));
  MPI_Gather(&mine, 6, MPI_UINT64_T, ranks.data(), 6, MPI_UINT64_T, 0, s->world);
  if (rank == 0)
    write_global_defs(archive, s, g, ranks, mpi_info);
  OTF2_Archive_Close(archive);

  if (s->unbalanced_ends > 0)
    s->host->log(s->self,
                 ("rank " + std::to_string(rank) + ": " + std::to_string(s->unbalanced_ends) +
                  " region ends without a begin were ignored")
                     .c_str());
  if (mine.dropped > 0) {
    const std::string line =
        "rank " + std::to_string(rank) + " dropped " + std::to_string(mine.dropped) +
        " events at limit=" + std::to_string(s->opt.limit_bytes) + " bytes (policy " +
        (s->opt.policy == limit_policy::ring ? "ring" : "stop") + ")";
    s->host->log(s->self, line.c_str());
  }
  if (rank == 0) {
    uint64_t events = 0;
    uint64_t dropped = 0;
    for (const rank_figures& r : ranks) {
      events += r.events;
      dropped += r.dropped;
    }
    std::string line = std::to_string(events) + " events of " + std::to_string(size) +
                       " ranks in " + s->dir + "/traces.otf2";
    if (dropped > 0)
      line += " (" + std::to_string(dropped) + " dropped at the size limit)";
    s->host->log(s->self, line.c_str());
  }
}

void trace_unload(void* raw) {
  auto* s = static_cast<trace_state*>(raw);
  if (g_state == s)
    g_state = nullptr;
  delete s;
}

const strata_module trace_module = {
    STRATA_MODULE_ABI_VERSION,
    "trace",
    STRATA_MPI_FLAVOR,
    "every MPI call and user region of each rank, written as one OTF2 archive per job",
    trace_load,
    trace_mpi_ready,
    nullptr,
    on_exit,
    nullptr,
    trace_finalize,
    trace_unload,
};

const strata_module_regions trace_regions = {sizeof(strata_module_regions), on_region_begin,
                                             on_region_end};

} // namespace
} // namespace strata::trace

extern "C" STRATA_MODULE_EXPORT const strata_module* strata_module_v1(void) {
  return &strata::trace::trace_module;
}

extern "C" STRATA_MODULE_EXPORT const strata_module_regions* strata_module_regions_v1(void) {
  return &strata::trace::trace_regions;
}
