// The wrapped completion functions (MPI_Wait/Test and their -all/-any/-some forms) and probes
// (MPI_Iprobe, MPI_Improbe): by the time an exit callback could run, the requests they complete
// are freed and the statuses may be ignored, so the wrappers snapshot the handles, substitute
// statuses for MPI_STATUS(ES)_IGNORE, time the call themselves and record it with one completion
// record per request it completed. A poll (Test, Iprobe & co.) that completed nothing joins the
// run of empty polls of its routine and call site when that run is among the last few records
// and only such runs follow it, so a polling loop makes one record per routine and call site it
// polls, not one per iteration.
#include "tracer/module/state.hpp"

#include <strata/zmpi.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace strata::trace {
namespace {

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

// A poll that completed nothing joins a run of empty polls of the same routine and call site
// among the last few records when all of them are such runs: a polling loop that alternates
// between a few polls (HPCC's RandomAccess tests two requests in turn; a loop may test and
// probe) makes one record per routine and call site, not one per iteration. Each run keeps its
// own count and time inside its polls; the group's runs, in order of their first poll, are laid
// back to back from the first one's enter, each as long as the time inside its polls, the last
// one to the latest leave (the time between the polls), so the location still nests.
constexpr size_t poll_group_runs = 4;

void record_empty_poll(trace_state* s, int fid, uint64_t t0, uint64_t t1) {
  if (!s->functions[static_cast<size_t>(fid)].wanted || !in_window(s, t0))
    return;
  const auto site = reinterpret_cast<uint64_t>(s->host->call_site());
  const uint32_t id = record::make_id(record_kind::poll_run, static_cast<uint32_t>(fid));
  std::array<record*, poll_group_runs> group{}; // group[0] the last record
  size_t runs = 0;
  record* same = nullptr;
  for (; runs < poll_group_runs; ++runs) {
    record* r = s->buffer->recent(runs);
    if (r == nullptr || r->kind() != record_kind::poll_run)
      break;
    group[runs] = r;
    if (r->id == id && r->call_site == site)
      same = r;
  }
  if (same != nullptr) {
    ++same->polls;
    same->poll_ns += t1 - t0;
    for (size_t k = runs - 1; k > 0; --k) {
      group[k]->t_leave = group[k]->t_enter + group[k]->poll_ns;
      group[k - 1]->t_enter = group[k]->t_leave;
    }
    group[0]->t_leave = t1;
    return;
  }
  record* r = s->buffer->append();
  if (r == nullptr)
    return;
  *r = record{};
  r->t_enter = t0;
  r->t_leave = t1;
  r->call_site = site;
  r->id = id;
  r->polls = 1;
  r->poll_ns = t1 - t0;
}

void record_completed(trace_state* s, int fid, uint64_t t0, uint64_t t1, uint64_t handle,
                      const MPI_Status* status) {
  pending_request p;
  if (!s->requests.take(handle, p))
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
  if (status == nullptr)
    return;
  // Reading the status is the tracer's own business: straight to MPI, seen by no layer below
  // (the application made no such call).
  const int saved_layer = s->host->set_layer(STRATA_LAYER_MPI);
  // A cancelled request's status says nothing of a message (its source is undefined).
  int cancelled = 0;
  if (PMPI_Test_cancelled(status, &cancelled) == MPI_SUCCESS && cancelled) {
    r->id = record::make_id(record_kind::cancelled, 0);
  } else if (p.recv) {
    int count = 0;
    if (PMPI_Get_count(status, MPI_BYTE, &count) == MPI_SUCCESS && count != MPI_UNDEFINED)
      r->bytes_received = count;
    r->source = status->MPI_SOURCE;
    r->recv_tag = status->MPI_TAG;
  }
  s->host->set_layer(saved_layer);
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
  if (rc == MPI_SUCCESS && *flag == 0) {
    strata::trace::record_empty_poll(s, fid, t0, t1);
    return rc;
  }
  strata::trace::record_completion_call(s, fid, t0, t1);
  if (rc == MPI_SUCCESS)
    strata::trace::record_completed(s, fid, t0, t1, handle, st);
  return rc;
}

namespace {
using strata::trace::scratch;

// Snapshots the handles before MPI frees them, times the call, then records it and the requests
// it completed: `completed(each)` calls each(index, status) for every one. A poll for which
// `nothing()` says it completed nothing joins its run of empty polls instead.
template <typename Call, typename Nothing, typename Completed>
int traced_completion(int fid, int count, MPI_Request* requests, Call call, Nothing nothing,
                      Completed completed) {
  auto* s = g_state;
  auto& sc = scratch(static_cast<size_t>(std::max(count, 0)));
  for (int i = 0; i < count; ++i)
    sc.handles[static_cast<size_t>(i)] = strata::trace::request_bits(requests[i]);
  const uint64_t t0 = s->host->now_ns();
  const int rc = call();
  const uint64_t t1 = s->host->now_ns();
  if (rc == MPI_SUCCESS && nothing()) {
    strata::trace::record_empty_poll(s, fid, t0, t1);
    return rc;
  }
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
  STRATA_TRACE_FID("MPI_Waitall");
  return traced_completion(
      fid, count, requests, [&] { return ZMPI_Waitall(count, requests, st); }, [] { return false; },
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
  STRATA_TRACE_FID("MPI_Testall");
  return traced_completion(
      fid, count, requests, [&] { return ZMPI_Testall(count, requests, flag, st); },
      [&] { return *flag == 0; },
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
  STRATA_TRACE_FID("MPI_Waitany");
  return traced_completion(
      fid, count, requests, [&] { return ZMPI_Waitany(count, requests, index, st); },
      [] { return false; },
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
  STRATA_TRACE_FID("MPI_Testany");
  return traced_completion(
      fid, count, requests, [&] { return ZMPI_Testany(count, requests, index, flag, st); },
      [&] { return *flag == 0 || *index == MPI_UNDEFINED; },
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
  STRATA_TRACE_FID("MPI_Waitsome");
  return traced_completion(
      fid, incount, requests,
      [&] { return ZMPI_Waitsome(incount, requests, outcount, indices, st); }, [] { return false; },
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
  STRATA_TRACE_FID("MPI_Testsome");
  return traced_completion(
      fid, incount, requests,
      [&] { return ZMPI_Testsome(incount, requests, outcount, indices, st); },
      [&] { return *outcount == 0 || *outcount == MPI_UNDEFINED; },
      [&](auto each) {
        for (int k = 0; *outcount != MPI_UNDEFINED && k < *outcount; ++k)
          each(indices[k], &st[k]);
      });
}

namespace {
// A probe: a call of its own when it found a message, else one more empty poll.
template <typename Call> int traced_probe(int fid, const int* flag, Call call) {
  auto* s = g_state;
  const uint64_t t0 = s->host->now_ns();
  const int rc = call();
  const uint64_t t1 = s->host->now_ns();
  if (rc == MPI_SUCCESS && *flag == 0)
    strata::trace::record_empty_poll(s, fid, t0, t1);
  else
    strata::trace::record_completion_call(s, fid, t0, t1);
  return rc;
}
} // namespace

extern "C" STRATA_MODULE_EXPORT int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag,
                                               MPI_Status* status) {
  if (!tracing_now(g_state))
    return ZMPI_Iprobe(source, tag, comm, flag, status);
  STRATA_TRACE_FID("MPI_Iprobe");
  return traced_probe(fid, flag, [&] { return ZMPI_Iprobe(source, tag, comm, flag, status); });
}

extern "C" STRATA_MODULE_EXPORT int MPI_Improbe(int source, int tag, MPI_Comm comm, int* flag,
                                                MPI_Message* message, MPI_Status* status) {
  if (!tracing_now(g_state))
    return ZMPI_Improbe(source, tag, comm, flag, message, status);
  STRATA_TRACE_FID("MPI_Improbe");
  return traced_probe(fid, flag,
                      [&] { return ZMPI_Improbe(source, tag, comm, flag, message, status); });
}
