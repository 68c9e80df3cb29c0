// What the trace module records while the program runs: one record per MPI call (from the core's
// decoded event at exit) and per region begin or end. The hot path: no allocation, lock or system
// call except when a chunk of the buffer fills or a communicator or region is seen first.
#include "tracer/module/state.hpp"

#include <algorithm>
#include <cstring>

namespace strata::trace {
namespace {

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

// The message records of the persistent requests an MPI_Start or MPI_Startall started, after its
// call record: each start gets a request id of its own, completed like an Isend's or Irecv's.
void record_starts(trace_state* s, const strata_event* ev, bool all) {
  const auto start = [s, ev](uint64_t handle) {
    const auto it = s->persistent.find(handle);
    if (it == s->persistent.end())
      return; // a persistent collective, or a request the trace did not see made
    const trace_state::persistent_request& p = it->second;
    record* r = s->buffer->append();
    if (r == nullptr)
      return;
    *r = record{};
    r->t_enter = ev->t_enter_ns;
    r->t_leave = ev->t_enter_ns;
    r->bytes_sent = p.recv ? 0 : p.bytes;
    r->request = s->next_request++;
    r->id = record::make_id(record_kind::started, (p.recv ? started_receive : 0) |
                                                      (p.partitioned ? started_partitioned : 0));
    r->comm = p.comm;
    r->peer = p.peer;
    r->tag = p.tag;
    s->requests.track(handle, r->request, p.comm, p.recv);
  };
  if (!all) {
    start(ev->request);
    return;
  }
  const auto* handles = static_cast<const MPI_Request*>(ev->requests);
  for (int i = 0; i < ev->request_count; ++i) {
    uint64_t bits = 0;
    std::memcpy(&bits, &handles[i], sizeof(MPI_Request)); // NOLINT(bugprone-sizeof-expression)
    start(bits);
  }
}

} // namespace

void on_exit(strata_event* ev, void* raw) {
  auto* s = static_cast<trace_state*>(raw);
  const fn_info& f = s->functions[static_cast<size_t>(ev->function)];
  if (f.counted) { // the core delivers such a call when another module of its group wants it
    __atomic_fetch_add(&s->counted[static_cast<size_t>(ev->function)], 1, __ATOMIC_RELAXED);
    return;
  }
  if (!tracing(s))
    return;
  // Kept before the time window opens too: its starts may fall into it.
  if ((f.cls == fn_class::send_init || f.cls == fn_class::recv_init) && ev->request != 0 &&
      ev->result == MPI_SUCCESS) {
    const bool recv = f.cls == fn_class::recv_init;
    s->persistent[ev->request] = {comm_index(s, ev),         ev->peer, ev->tag,
                                  recv ? 0 : ev->bytes_sent, recv,     f.partitioned};
  }
  if (!in_window(s, ev->t_enter_ns))
    return;
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
    s->requests.track(ev->request, r->request, r->comm, f.cls == fn_class::irecv);
  } else if ((f.cls == fn_class::start || f.cls == fn_class::start_all) &&
             ev->result == MPI_SUCCESS) {
    record_starts(s, ev, f.cls == fn_class::start_all);
  }
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

} // namespace strata::trace
