#pragma once
// A rank's point-to-point pairs in a 3-D stencil of 50 x 50 x (ranks / 2500) with periodic
// borders: six partners, ten messages each, bytes that differ by pair. The simulations of a
// 100,000-rank record (communication_test.cpp, collectives_test.cpp) build each rank's list so.

#include "profiler/communication.hpp"

#include <cstdint>

namespace strata::profiler::testdata {

inline pair_list stencil_pairs(uint32_t r, uint32_t ranks) {
  const uint32_t nx = 50, ny = 50;
  const uint32_t x = r % nx, y = (r / nx) % ny;
  const uint32_t partners[6] = {x > 0 ? r - 1 : r + nx - 1,
                                x + 1 < nx ? r + 1 : r + 1 - nx,
                                y > 0 ? r - nx : r + nx * (ny - 1),
                                y + 1 < ny ? r + nx : r - nx * (ny - 1),
                                (r + nx * ny) % ranks,
                                (r + ranks - nx * ny) % ranks};
  pair_list here;
  for (const uint32_t to : partners) {
    pair_figures p;
    p.from = r;
    p.to = to;
    p.messages[pair_kind_point_to_point] = 10;
    p.bytes[pair_kind_point_to_point] = 1000 + (r * 7919 + to) % 100'000;
    here.pairs.push_back(p);
  }
  return here;
}

} // namespace strata::profiler::testdata
