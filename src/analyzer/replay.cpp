#include "analyzer/replay.hpp"

#include "analyzer/event_tee.hpp"
#include "analyzer/partial.hpp"
#include "analyzer/process_agreement.hpp"
#include "analyzer/shared_anchor_probe.hpp"

#include <algorithm>
#include <climits>
#include <memory>
#include <optional>
#include <vector>

namespace strata::analyze {
namespace {

// Each process's records for each other process, in order; what every process sent this one,
// by sending process in turn.
template <class T>
std::vector<T> all_to_all(const comm_info& c, const std::vector<std::vector<T>>& out) {
  const auto n = static_cast<size_t>(c.size);
  std::vector<int> send_counts(n), recv_counts(n), send_at(n), recv_at(n);
  std::vector<T> flat;
  for (size_t p = 0; p < n; ++p) {
    if (out[p].size() > INT_MAX || flat.size() > INT_MAX - out[p].size())
      throw trace_error("more than 2^31 records for one analysis process");
    send_at[p] = static_cast<int>(flat.size());
    send_counts[p] = static_cast<int>(out[p].size());
    flat.insert(flat.end(), out[p].begin(), out[p].end());
  }
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, c.comm);
  size_t total = 0;
  for (size_t p = 0; p < n; ++p) {
    recv_at[p] = static_cast<int>(total);
    total += static_cast<size_t>(recv_counts[p]);
  }
  std::vector<T> in(total);
  MPI_Datatype record = MPI_DATATYPE_NULL;
  MPI_Type_contiguous(static_cast<int>(sizeof(T)), MPI_BYTE, &record);
  MPI_Type_commit(&record);
  MPI_Alltoallv(flat.data(), send_counts.data(), send_at.data(), record, in.data(),
                recv_counts.data(), recv_at.data(), record, c.comm);
  MPI_Type_free(&record);
  return in;
}

// Every process's encoded partial result, at process 0.
std::vector<std::vector<uint64_t>> gather_words(const comm_info& c,
                                                const std::vector<uint64_t>& mine) {
  if (mine.size() > INT_MAX)
    throw trace_error("a partial analysis result too large to send");
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(c.rank == 0 ? static_cast<size_t>(c.size) : 0);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, c.comm);
  std::vector<int> at(counts.size());
  size_t total = 0;
  for (size_t p = 0; p < counts.size(); ++p) {
    at[p] = static_cast<int>(total);
    total += static_cast<size_t>(counts[p]);
  }
  std::vector<uint64_t> all(total);
  MPI_Gatherv(mine.data(), count, MPI_UINT64_T, all.data(), counts.data(), at.data(), MPI_UINT64_T,
              0, c.comm);
  std::vector<std::vector<uint64_t>> out;
  for (size_t p = 0; p < counts.size(); ++p)
    out.emplace_back(all.begin() + at[p], all.begin() + at[p] + counts[p]);
  return out;
}

// Hands what crosses to other processes to them and takes theirs: sends and collective members,
// then the late-receiver times of the sends matched here back to their processes.
bool exchange_round(const comm_info& c, analyzer& a, std::string& error) {
  std::vector<remote_send> sends = all_to_all(c, a.take_sends());
  std::vector<remote_member> members = all_to_all(c, a.take_members());
  if (!step(c, error, [&] {
        a.receive_sends(sends.data(), sends.size());
        a.receive_members(members.data(), members.size());
      }))
    return false;
  sends = {};
  members = {};
  const std::vector<remote_wait> waits = all_to_all(c, a.take_waits());
  return step(c, error, [&] { a.receive_waits(waits.data(), waits.size()); });
}

} // namespace

replay_result replay_trace(const std::string& path, MPI_Comm comm, uint64_t batch,
                           const replay_taps& taps) {
  replay_result result;
  comm_info c = comm_info_of(comm);
  c.work_cpu_s = &result.work_cpu_s;
  std::unique_ptr<trace_reader> reader;
  probe_anchor_once(c, path);
  if (!step(c, result.error, [&] { reader = std::make_unique<trace_reader>(path); }))
    return result;
  const definitions& defs = reader->defs();
  const partition part{static_cast<uint32_t>(c.size), static_cast<uint32_t>(c.rank),
                       static_cast<uint32_t>(defs.ranks())};
  std::optional<analyzer> a;
  std::optional<event_tee> tee;
  uint64_t share = 0; // the records this process's ranks declare
  if (!step(c, result.error, [&] {
        if (static_cast<size_t>(c.size) > defs.ranks())
          throw trace_error(defs.archive + ": " + std::to_string(c.size) +
                            " analysis processes for a trace of " + std::to_string(defs.ranks()) +
                            " locations; use at most " + std::to_string(defs.ranks()));
        a.emplace(defs, part, taps.observer);
        result.first_rank = part.first(part.self);
        result.last_rank = part.first(part.self + 1);
        for (uint32_t r = result.first_rank; r < result.last_rank; ++r)
          share += defs.declared_events[r];
        event_handler* handler = &*a;
        if (taps.events != nullptr)
          handler = &tee.emplace(*taps.events, *a);
        reader->open_events(*handler, result.first_rank, result.last_rank);
      }))
    return result;
  // As many rounds as the largest share needs; each process reads its share's fraction in each.
  uint64_t largest = 0;
  MPI_Allreduce(&share, &largest, 1, MPI_UINT64_T, MPI_MAX, comm);
  batch = std::max<uint64_t>(batch, 1);
  const uint64_t rounds = std::max<uint64_t>(1, (largest + batch - 1) / batch);
  const uint64_t per_round = std::max<uint64_t>(1, (share + rounds - 1) / rounds);
  for (uint64_t round = 0; round < rounds; ++round) {
    const bool last = round + 1 == rounds;
    if (!step(c, result.error, [&] {
          if (!last) {
            reader->read_some(per_round);
            return;
          }
          while (reader->read_some(UINT64_MAX) > 0) {
          }
          result.events_read = reader->close_events();
          a->close_ranks();
        }))
      return result;
    if (!exchange_round(c, *a, result.error))
      return result;
  }
  std::vector<uint64_t> words;
  if (!step(c, result.error, [&] { words = encode_partial(a->take_partial(result.events_read)); }))
    return result;
  a.reset();
  std::vector<std::vector<uint64_t>> all = gather_words(c, words);
  words = {};
  if (!step(c, result.error, [&] {
        if (c.rank != 0)
          return;
        std::vector<partial_result> parts;
        parts.reserve(all.size());
        for (const auto& w : all)
          parts.push_back(decode_partial(w.data(), w.size()));
        all = {};
        result.rep = assemble_report(defs, parts);
      }))
    return result;
  result.ok = true;
  return result;
}

} // namespace strata::analyze
