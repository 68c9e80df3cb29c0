#include "topology.h"

#include <strata/annotate.h>

#include <cmath>

namespace par {

namespace {
int square_root_or_throw(int size) {
  const int q = static_cast<int>(std::lround(std::sqrt(static_cast<double>(size))));
  if (q * q != size) {
    throw NotSquare(size);
  }
  return q;
}
} // namespace

GridTopology::GridTopology(const Group& all)
    : all_(all), dim_(square_root_or_throw(all.size())), row_(all.rank() / dim_),
      col_(all.rank() % dim_), row_group_(all), col_group_(all) {
  STRATA_FUNCTION(); // before the splits, so that they nest inside the constructor
  row_group_ = all_.split(row_, col_);
  col_group_ = all_.split(col_, row_);
}

void GridTopology::transpose(const double* send, int send_count, double* recv,
                             int recv_count) const {
  STRATA_FUNCTION();
  all_.exchange(member(col_, row_), send, send_count, recv, recv_count);
}

} // namespace par
