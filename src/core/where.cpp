// strata/where.h: the calling thread's record of where it is with respect to MPI, and what a
// reader on another thread needs to make sense of its raw arguments without calling MPI.
#include "core/core_internal.hpp"
#include "core/decode.hpp"
#include "core/dispatch.hpp"

#include <strata/where.h>

#include <cstring>

extern "C" STRATA_EXPORT const strata_where* strata_where_of_this_thread(void) {
  return &strata::core::tls.where;
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
