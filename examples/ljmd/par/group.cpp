#include "group.h"

#include <strata/annotate.h>

#include <algorithm>
#include <numeric>

namespace par {

namespace {
enum { kTagExpand = 101, kTagFold = 102, kTagExchange = 103 };

void free_comm(MPI_Comm* comm) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && *comm != MPI_COMM_WORLD && *comm != MPI_COMM_NULL) {
    MPI_Comm_free(comm);
  }
  delete comm;
}
} // namespace

Group::Group(std::shared_ptr<MPI_Comm> comm) : comm_(std::move(comm)) {
  MPI_Comm_rank(*comm_, &rank_);
  MPI_Comm_size(*comm_, &size_);
}

Group Group::world() {
  return Group(std::shared_ptr<MPI_Comm>(new MPI_Comm(MPI_COMM_WORLD), free_comm));
}

Group Group::split(int color, int key) const {
  STRATA_FUNCTION();
  std::shared_ptr<MPI_Comm> sub(new MPI_Comm(MPI_COMM_NULL), free_comm);
  MPI_Comm_split(*comm_, color, key, sub.get());
  return Group(sub);
}

void Group::bcast(void* data, int bytes, int root) const {
  STRATA_FUNCTION();
  MPI_Bcast(data, bytes, MPI_BYTE, root, *comm_);
}

void Group::sum(double* values, int count) const {
  STRATA_FUNCTION();
  MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, *comm_);
}

double Group::sum(double value) const {
  STRATA_FUNCTION();
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_SUM, *comm_);
  return value;
}

void Group::sum_to(double* values, int count, int root) const {
  STRATA_FUNCTION();
  if (rank_ == root) {
    MPI_Reduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, root, *comm_);
  } else {
    MPI_Reduce(values, nullptr, count, MPI_DOUBLE, MPI_SUM, root, *comm_);
  }
}

void Group::exchange(int partner, const double* send, int send_count, double* recv,
                     int recv_count) const {
  STRATA_FUNCTION();
  if (partner == rank_) {
    std::copy(send, send + send_count, recv);
    return;
  }
  MPI_Sendrecv(send, send_count, MPI_DOUBLE, partner, kTagExchange, recv, recv_count, MPI_DOUBLE,
               partner, kTagExchange, *comm_, MPI_STATUS_IGNORE);
}

void Group::shift(const double* send, int send_count, double* recv, int recv_count, int tag) const {
  // Not annotated: a ring step is part of expand or fold, whose MPI calls it makes.
  const int next = (rank_ + 1) % size_, previous = (rank_ + size_ - 1) % size_;
  MPI_Sendrecv(send, send_count, MPI_DOUBLE, next, tag, recv, recv_count, MPI_DOUBLE, previous, tag,
               *comm_, MPI_STATUS_IGNORE);
}

void Group::expand(const double* mine, double* all, const std::vector<int>& counts) const {
  STRATA_FUNCTION();
  std::vector<int> displs(counts.size(), 0);
  std::partial_sum(counts.begin(), counts.end() - 1, displs.begin() + 1);
  std::copy(mine, mine + counts[rank_], all + displs[rank_]);
  // Step s passes on the block that started at member rank - s: after size-1 steps every
  // member has seen every block.
  for (int s = 0; s + 1 < size_; ++s) {
    const int out = (rank_ - s + size_) % size_, in = (rank_ - s - 1 + size_) % size_;
    shift(all + displs[out], counts[out], all + displs[in], counts[in], kTagExpand);
  }
}

void Group::fold(const double* all, double* mine, const std::vector<int>& counts) const {
  STRATA_FUNCTION();
  std::vector<int> displs(counts.size(), 0);
  std::partial_sum(counts.begin(), counts.end() - 1, displs.begin() + 1);
  // A running sum travels round the ring: it starts as member rank-1's block here, and each
  // step it moves one member on and adds that member's part, ending at its owner.
  int block = (rank_ - 1 + size_) % size_;
  std::vector<double> partial(all + displs[block], all + displs[block] + counts[block]);
  std::vector<double> incoming;
  for (int s = 0; s + 1 < size_; ++s) {
    const int next_block = (block - 1 + size_) % size_;
    incoming.resize(static_cast<size_t>(counts[next_block]));
    shift(partial.data(), counts[block], incoming.data(), counts[next_block], kTagFold);
    block = next_block;
    for (int k = 0; k < counts[block]; ++k) {
      incoming[static_cast<size_t>(k)] += all[displs[block] + k];
    }
    partial.swap(incoming);
  }
  std::copy(partial.begin(), partial.end(), mine);
}

} // namespace par
