// strata/where.h: the calling thread's record of where it is with respect to MPI, and what a
// reader on another thread needs to make sense of its raw arguments without calling MPI.
#include "core/core_internal.hpp"
#include "core/decode.hpp"
#include "core/dispatch.hpp"
#include "python_sites/capture.hpp"
#include "python_sites/cpython.hpp"
#include "python_sites/extensions.hpp"

#include <strata/where.h>

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <new>

namespace strata::core {
namespace {

static_assert(sizeof(strata_where_post) == 64, "a post's place in its table is a shift");

// One table per listed thread, claimed when it is listed and given back when it ends (as
// many as there are records: a thread without a record of its own has no table either). The
// tables are never freed, so a reader never sees one go.
constexpr int where_post_tables = STRATA_WHERE_THREADS;
strata_where_posts post_tables[where_post_tables];
std::atomic<bool> post_table_taken[where_post_tables];

// The records of the threads whose calls reached a chain, each slot cleared by its thread's end
// (a key's destructor, which runs before the thread's memory goes).
std::atomic<const strata_where*> thread_records[STRATA_WHERE_THREADS];
pthread_key_t thread_record_key;

// The threads beyond the list each write a table of their own that nobody reads (one shared
// table would be written by all of them at once): made on the thread's first call, off the
// timed path, kept on a free list when the thread ends for the next one, never freed. Plain
// globals, trivially destroyed: a thread may end after the process's destructors ran.
struct unlisted_table {
  strata_where_posts posts;
  unlisted_table* next_free;
};
std::mutex unlisted_tables_lock;
unlisted_table* free_unlisted_tables = nullptr;
pthread_key_t unlisted_table_key;
std::atomic<int> unlisted_threads{0};

// A table for the calling thread, which has a record slot: there are as many tables, and a
// thread that ends gives its table back before its slot (&discarded_posts, should that ever
// fail). The former owner's requests are cleared first: they are not this thread's.
strata_where_posts* claim_where_posts() {
  for (int i = 0; i < where_post_tables; ++i) {
    bool taken = false;
    if (!post_table_taken[i].compare_exchange_strong(taken, true, std::memory_order_acq_rel))
      continue;
    strata_where_posts& table = post_tables[i];
    for (strata_where_post& post : table.posts) {
      post.handle = 0;
      post.function = -1;
    }
    std::atomic_ref<const strata_where*>(table.owner).store(&tls.where, std::memory_order_release);
    return &table;
  }
  return &discarded_posts;
}

// The thread ends: its table goes back, then its record leaves the list (in this order, so that
// a thread that takes the slot finds a table free).
void forget_thread_record(void* slot) {
  strata_where_posts* table = tls.posts;
  tls.posts = &discarded_posts;
  if (table != &discarded_posts) {
    std::atomic_ref<const strata_where*>(table->owner).store(nullptr, std::memory_order_release);
    post_table_taken[table - post_tables].store(false, std::memory_order_release);
  }
  static_cast<std::atomic<const strata_where*>*>(slot)->store(nullptr, std::memory_order_release);
}

// An unlisted thread ends: its table goes to the free list.
void give_back_unlisted_table(void* table) {
  tls.posts = &discarded_posts;
  unlisted_threads.fetch_sub(1, std::memory_order_relaxed);
  auto* given = static_cast<unlisted_table*>(table);
  const std::lock_guard guard(unlisted_tables_lock);
  given->next_free = free_unlisted_tables;
  free_unlisted_tables = given;
}

// A thread beyond the list: a table of its own (what it held is not read, so not cleared), or
// &discarded_posts when none can be made or given back at its end.
strata_where_posts* unlisted_thread_table() {
  static const bool keyed = pthread_key_create(&unlisted_table_key, give_back_unlisted_table) == 0;
  if (!keyed)
    return &discarded_posts;
  unlisted_table* table = nullptr;
  {
    const std::lock_guard guard(unlisted_tables_lock);
    table = free_unlisted_tables;
    if (table != nullptr)
      free_unlisted_tables = table->next_free;
  }
  if (table == nullptr)
    table = new (std::nothrow) unlisted_table{};
  if (table == nullptr)
    return &discarded_posts;
  if (pthread_setspecific(unlisted_table_key, table) != 0) {
    const std::lock_guard guard(unlisted_tables_lock);
    table->next_free = free_unlisted_tables;
    free_unlisted_tables = table;
    return &discarded_posts;
  }
  unlisted_threads.fetch_add(1, std::memory_order_relaxed);
  return &table->posts;
}

} // namespace

strata_where_posts discarded_posts;

void list_this_thread() {
  tls.in_real &= ~thread_unlisted; // once, listed or not
  tls.where.thread = static_cast<int32_t>(::gettid());
  // A record that might outlive its thread is not listed.
  static const bool keyed = pthread_key_create(&thread_record_key, forget_thread_record) == 0;
  for (std::atomic<const strata_where*>& slot : thread_records) {
    const strata_where* empty = nullptr;
    if (!keyed || !slot.compare_exchange_strong(empty, &tls.where, std::memory_order_acq_rel))
      continue;
    if (pthread_setspecific(thread_record_key, &slot) == 0) {
      tls.posts = claim_where_posts();
      return;
    }
    slot.store(nullptr, std::memory_order_release);
    break;
  }
  tls.posts = unlisted_thread_table();
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

extern "C" STRATA_EXPORT int strata_where_unlisted_threads(void) {
  return strata::core::unlisted_threads.load(std::memory_order_relaxed);
}

extern "C" STRATA_EXPORT const strata_where* strata_where_of_this_thread(void) {
  return &strata::core::tls.where;
}

extern "C" STRATA_EXPORT const strata_where_posts*
strata_where_posts_of(const strata_where* where) {
  using namespace strata::core;
  for (int i = 0; i < where_post_tables; ++i)
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

extern "C" STRATA_EXPORT int strata_where_python_site(int32_t thread, const void* call_site,
                                                      char* file, size_t file_size, int32_t* line,
                                                      char* function, size_t function_size) {
  namespace ps = strata::python_sites;
  ps::place_text text;
  if (!ps::enabled || file_size == 0 || function_size == 0 ||
      !ps::in_extension_module(reinterpret_cast<uintptr_t>(call_site)) ||
      !ps::other_thread_site(thread, text))
    return 0;
  auto copy = [](const std::string& from, char* to, size_t size) {
    const size_t n = std::min(from.size(), size - 1);
    std::memcpy(to, from.data(), n);
    to[n] = '\0';
  };
  copy(text.file, file, file_size);
  copy(text.function, function, function_size);
  *line = text.line;
  return 1;
}
