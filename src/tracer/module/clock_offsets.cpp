// The trace module's clock alignment: each rank's offset to rank 0's clock, measured at MPI_Init
// and again at finalize (tracer/clock.hpp corrects the times in between along the line). The
// ranks measure down the binomial tree of tracer/unify.hpp in ceil(log2 P) rounds: each rank
// ping-pongs with its parent, which then sends its own offset to rank 0, and the two add up.
// A rank's uncertainty is the sum of the half round trips along its path to rank 0 (at most
// ceil(log2 P) of them); the parent's offset was measured a few round trips earlier, so clock
// drift adds next to nothing (10 ppm over 100 us is 1 ns).
#include "tracer/module/state.hpp"

#include "tracer/unify.hpp"

#include <limits>

namespace strata::trace {
namespace {

// On the tools' communicator the modules share, under tags no other module uses (a duplicate of
// it would cost more than the messages: Open MPI agrees on a new communicator with a
// nonblocking allreduce that leaves its progress function in every later poll of the program).
constexpr int ping_tag = 0x5470;
constexpr int pong_tag = 0x5471;
constexpr int offset_tag = 0x5472;

// Serves a child's ping-pongs, then tells it this rank's own offset to rank 0.
void serve(trace_state* s, int child, const double mine[2]) {
  constexpr int rounds = 8;
  for (int k = 0; k < rounds; ++k) {
    uint64_t t = 0;
    MPI_Recv(&t, 1, MPI_UINT64_T, child, ping_tag, s->world, MPI_STATUS_IGNORE);
    t = s->host->now_ns();
    MPI_Send(&t, 1, MPI_UINT64_T, child, pong_tag, s->world);
  }
  MPI_Send(mine, 2, MPI_DOUBLE, child, offset_tag, s->world);
}

// The parent's clock minus ours from the ping-pong with the smallest round trip, and half that
// round trip.
int64_t ping(trace_state* s, int parent, uint64_t& best_rtt) {
  constexpr int rounds = 8;
  int64_t best_offset = 0;
  best_rtt = std::numeric_limits<uint64_t>::max();
  for (int k = 0; k < rounds; ++k) {
    uint64_t t = 0;
    const uint64_t sent = s->host->now_ns();
    MPI_Send(&t, 1, MPI_UINT64_T, parent, ping_tag, s->world);
    MPI_Recv(&t, 1, MPI_UINT64_T, parent, pong_tag, s->world, MPI_STATUS_IGNORE);
    const uint64_t back = s->host->now_ns();
    if (back - sent < best_rtt) {
      best_rtt = back - sent;
      best_offset = static_cast<int64_t>(t) - static_cast<int64_t>(sent + (back - sent) / 2);
    }
  }
  return best_offset;
}

} // namespace

int64_t measure_offset(trace_state* s, double& uncertainty) {
  const tree_links links = binomial_links(s->rank, s->world_size);
  // {offset to rank 0, uncertainty}; as doubles, exact for offsets below 2^53 ns.
  double mine[2] = {0, 0};
  if (links.parent >= 0) {
    uint64_t rtt = 0;
    const int64_t to_parent = ping(s, links.parent, rtt);
    double parents[2] = {0, 0};
    MPI_Recv(parents, 2, MPI_DOUBLE, links.parent, offset_tag, s->world, MPI_STATUS_IGNORE);
    mine[0] = parents[0] + static_cast<double>(to_parent);
    mine[1] = parents[1] + static_cast<double>(rtt) / 2;
  }
  // The children in decreasing subtree size: the largest subtree starts its own rounds first.
  for (auto child = links.children.rbegin(); child != links.children.rend(); ++child)
    serve(s, *child, mine);
  uncertainty = mine[1];
  return static_cast<int64_t>(mine[0]);
}

} // namespace strata::trace
