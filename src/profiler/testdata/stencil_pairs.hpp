#pragma once
// A rank's point-to-point pairs in a 3-D stencil of 50 x 50 x (ranks / 2500) with periodic
// borders: six partners, ten messages each, bytes that differ by pair. The simulations of a
// 100,000-rank record (communication_test.cpp, collectives_test.cpp) build each rank's list so.

#include "common/address_sanitizer.hpp"
#include "profiler/communication.hpp"

#include <cstdint>

namespace strata::profiler::testdata {

// The world of those simulations: 100,000 ranks, and 20,000 under ASan (scripts/test.sh's
// sanitized unit tests), where 100,000 took about 4 minutes at -O0; both are whole numbers of the
// stencil's 2,500-rank planes and collectives_test.cpp's 32-rank groups. The record's lists are
// capped (listed_pairs_limit, listed_communicators_limit), not sized by the world, so the 1 MiB
// bound is the same; the optimized tree keeps checking it at 100,000.
inline constexpr uint32_t large_world_ranks =
    common::built_with_address_sanitizer ? 20'000 : 100'000;

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
