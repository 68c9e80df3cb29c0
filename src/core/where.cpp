// strata/where.h: the calling thread's record of where it is with respect to MPI, and what a
// reader on another thread needs to make sense of its raw arguments without calling MPI.
#include "core/core_internal.hpp"
#include "core/decode.hpp"
#include "core/dispatch.hpp"

#include <strata/where.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace strata::core {
namespace {

// One table per thread that made a request, never given back (a thread's table outlives it, so
// a reader never sees it freed); threads beyond these keep none.
constexpr int where_post_tables = 64;
strata_where_posts post_tables[where_post_tables];
std::atomic<int> post_tables_taken{0};

} // namespace

strata_where_posts* claim_where_posts() {
  if (post_tables_taken.load(std::memory_order_relaxed) >= where_post_tables)
    return nullptr;
  const int i = post_tables_taken.fetch_add(1, std::memory_order_relaxed);
  if (i >= where_post_tables)
    return nullptr;
  std::atomic_ref<const strata_where*>(post_tables[i].owner)
      .store(&tls.where, std::memory_order_release);
  return &post_tables[i];
}

} // namespace strata::core

extern "C" STRATA_EXPORT const strata_where* strata_where_of_this_thread(void) {
  return &strata::core::tls.where;
}

extern "C" STRATA_EXPORT const strata_where_posts*
strata_where_posts_of(const strata_where* where) {
  using namespace strata::core;
  const int taken = std::min(post_tables_taken.load(std::memory_order_acquire), where_post_tables);
  for (int i = 0; i < taken; ++i)
    if (std::atomic_ref<const strata_where*>(post_tables[i].owner)
            .load(std::memory_order_acquire) == where)
      return &post_tables[i];
  return nullptr;
}

extern "C" STRATA_EXPORT int strata_where_comm(const void* comm, int32_t* size,
                                               const int** world_ranks) {
  MPI_Comm handle;
  std::memcpy(&handle, comm, sizeof(handle)); // NOLINT(bugprone-sizeof-expression)
  const strata::decode::comm_info* info = strata::decode::find_comm_without_mpi(handle);
  if (info == nullptr || info->inter)
    return 0;
  *size = info->size;
  *world_ranks = info->world_ranks;
  return 1;
}

extern "C" STRATA_EXPORT int64_t strata_where_type_size(const void* type) {
  MPI_Datatype handle;
  std::memcpy(&handle, type, sizeof(handle)); // NOLINT(bugprone-sizeof-expression)
  const uint64_t bits = strata::decode::handle_bits(handle);
  using strata::decode::predefined_types;
  for (size_t i = strata::decode::predefined_type_slot_of(bits);;
       i = (i + 1) & (strata::decode::predefined_type_slots - 1)) {
    const uint64_t key = predefined_types[i].handle.load(std::memory_order_acquire);
    if (key == 0)
      return -1;
    if (key == bits)
      return predefined_types[i].size;
  }
}
