// strata/where.h: the calling thread's record of where it is with respect to MPI, and what a
// reader on another thread needs to make sense of its raw arguments without calling MPI.
#include "core/core_internal.hpp"
#include "core/decode.hpp"
#include "core/dispatch.hpp"

#include <strata/where.h>

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace strata::core {
namespace {

static_assert(sizeof(strata_where_post) == 64, "a post's place in its table is a shift");

// One table per thread that made a request, never given back (a thread's table outlives it, so
// a reader never sees it freed); threads beyond these keep none.
constexpr int where_post_tables = 64;
strata_where_posts post_tables[where_post_tables];
std::atomic<int> post_tables_taken{0};

// The records of the threads whose calls reached a chain, each slot cleared by its thread's end
// (a key's destructor, which runs before the thread's memory goes).
std::atomic<const strata_where*> thread_records[STRATA_WHERE_THREADS];
pthread_key_t thread_record_key;

void forget_thread_record(void* slot) {
  static_cast<std::atomic<const strata_where*>*>(slot)->store(nullptr, std::memory_order_release);
}

} // namespace

void list_this_thread() {
  tls.in_real &= ~thread_unlisted; // once, listed or not
  tls.where.thread = static_cast<int32_t>(::gettid());
  static const bool keyed = pthread_key_create(&thread_record_key, forget_thread_record) == 0;
  if (!keyed)
    return; // a record that might outlive its thread is not listed
  for (std::atomic<const strata_where*>& slot : thread_records) {
    const strata_where* empty = nullptr;
    if (slot.compare_exchange_strong(empty, &tls.where, std::memory_order_acq_rel)) {
      if (pthread_setspecific(thread_record_key, &slot) != 0)
        slot.store(nullptr, std::memory_order_release);
      return;
    }
  }
}

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

extern "C" STRATA_EXPORT int strata_where_threads(const strata_where** out, int max) {
  int found = 0;
  for (const std::atomic<const strata_where*>& slot : strata::core::thread_records) {
    const strata_where* record = slot.load(std::memory_order_acquire);
    if (record != nullptr && found < max)
      out[found++] = record;
  }
  return found;
}

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
