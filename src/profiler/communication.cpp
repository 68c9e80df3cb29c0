#include "profiler/communication.hpp"
#include "profiler/tree_words.hpp"

#include "gen/routines.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace strata::profiler {

int pair_kind_of(std::string_view routine) {
  const routines::info* r = routines::find(routine);
  if (r == nullptr)
    return -1;
  if (r->kind == routines::kind::send || r->kind == routines::kind::isend)
    return pair_kind_point_to_point;
  if (r->kind == routines::kind::sendrecv)
    return pair_kind_sendrecv;
  switch (r->one_sided) {
  case routines::one_sided_op::put:
    return pair_kind_put;
  case routines::one_sided_op::get:
    return pair_kind_get;
  case routines::one_sided_op::accumulate:
    return pair_kind_accumulate;
  case routines::one_sided_op::none:
    break;
  }
  return -1;
}

request_role request_role_of(std::string_view routine) {
  const routines::info* r = routines::find(routine);
  if (r != nullptr && r->kind == routines::kind::collective && r->persistent)
    return request_role::makes_collective;
  // Partitioned requests, which the table's request uses leave out (their starts are no message
  // a hang diagnosis could name), are started as persistent ones are.
  if (r != nullptr && r->partitioned && r->persistent)
    return (r->roles & routines::role_send) != 0 ? request_role::makes_partitioned_send
                                                 : request_role::makes_receive;
  switch (r != nullptr ? routines::request_use_of(*r) : routines::request_use::none) {
  case routines::request_use::makes_send:
    return request_role::makes_send;
  case routines::request_use::makes_receive:
    return request_role::makes_receive;
  case routines::request_use::starts_one:
    return request_role::starts_one;
  case routines::request_use::starts_many:
    return request_role::starts_many;
  default:
    return request_role::none;
  }
}

persistent_requests::~persistent_requests() {
  if (slots_ != nullptr)
    ::munmap(slots_, capacity * sizeof(made));
}

const strata_started_slot* persistent_requests::open() {
  if (slots_ != nullptr)
    return slots_;
  void* p = ::mmap(nullptr, capacity * sizeof(made), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return nullptr;
  slots_ = static_cast<made*>(p);
  return slots_;
}

bool persistent_requests::note(uint64_t handle, uint64_t* sums, uint64_t bytes) {
  if (handle == 0)
    return true;
  if (open() == nullptr) {
    ++not_kept_;
    return false;
  }
  for (size_t i = home(handle);; i = (i + 1) & (capacity - 1)) {
    made& s = slots_[i];
    if (s.handle == handle || s.handle == 0) {
      if (s.handle == 0) {
        // One slot stays empty, so that every search ends.
        if (used_ + 1 >= capacity) {
          ++not_kept_;
          return false;
        }
        ++used_;
      }
      s = {handle, sums, bytes, 0};
      return true;
    }
  }
}

void persistent_requests::forget(uint64_t handle) {
  if (slots_ == nullptr || handle == 0)
    return;
  size_t i = home(handle);
  while (slots_[i].handle != handle) {
    if (slots_[i].handle == 0)
      return;
    i = (i + 1) & (capacity - 1);
  }
  // Backward shift: the requests after it that would not be found past the hole move into it.
  for (size_t j = (i + 1) & (capacity - 1); slots_[j].handle != 0; j = (j + 1) & (capacity - 1)) {
    const size_t start = home(slots_[j].handle);
    const bool stays = i <= j ? (i < start && start <= j) : (i < start || start <= j);
    if (stays)
      continue;
    slots_[i] = slots_[j];
    i = j;
  }
  slots_[i] = {};
  --used_;
}

sent_pairs::~sent_pairs() {
  if (base_ != nullptr)
    ::munmap(base_, bytes_);
}

namespace {

// The file's mapping, its blocks reserved; null when it cannot be made (nothing left behind).
void* map_pairs_file(const std::string& path, size_t bytes) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return nullptr;
  void* p = MAP_FAILED;
  if (::posix_fallocate(fd, 0, static_cast<off_t>(bytes)) == 0)
    p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    ::unlink(path.c_str());
    return nullptr;
  }
  return p;
}

} // namespace

std::string pairs_file_of(const std::string& rank_file_path) {
  const std::string_view suffix = ".prof";
  std::string path = rank_file_path;
  if (path.ends_with(suffix))
    path.resize(path.size() - suffix.size());
  return path + ".pairs";
}

bool sent_pairs::open(uint32_t ranks, const std::string& path, int32_t rank) {
  if (sums_ != nullptr || ranks == 0)
    return sums_ != nullptr;
  const size_t sums = sizeof(strata_pair_sum) * pair_kind_count * ranks;
  if (!path.empty() && ranks <= pairs_file_ranks) {
    const size_t bytes = pairs_file_header_bytes + sums;
    if (void* p = map_pairs_file(path, bytes)) {
      auto* header = static_cast<unsigned char*>(p);
      const uint32_t kinds = pair_kind_count;
      std::memcpy(header + 8, &kinds, sizeof kinds);
      std::memcpy(header + 12, &ranks, sizeof ranks);
      std::memcpy(header + 16, &rank, sizeof rank);
      std::memcpy(header, pairs_file_magic, sizeof pairs_file_magic); // last: the file is whole
      base_ = p;
      sums_ = reinterpret_cast<strata_pair_sum*>(header + pairs_file_header_bytes);
      ranks_ = ranks;
      bytes_ = bytes;
      path_ = path;
      return true;
    }
  }
  void* p = ::mmap(nullptr, sums, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return false;
  base_ = p;
  sums_ = static_cast<strata_pair_sum*>(p);
  ranks_ = ranks;
  bytes_ = sums;
  return true;
}

void sent_pairs::clear() {
  if (sums_ == nullptr)
    return;
  const size_t sums = sizeof(strata_pair_sum) * pair_kind_count * ranks_;
  // A file's pages keep their contents through MADV_DONTNEED: zeroed by hand.
  if (!path_.empty() || ::madvise(sums_, sums, MADV_DONTNEED) != 0)
    std::memset(static_cast<void*>(sums_), 0, sums);
}

bool read_pairs_file(const std::string& path, pair_list& out, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint32_t kinds = 0, ranks = 0;
  int32_t rank = 0;
  if (bytes.size() >= pairs_file_header_bytes) {
    std::memcpy(&kinds, bytes.data() + 8, sizeof kinds);
    std::memcpy(&ranks, bytes.data() + 12, sizeof ranks);
    std::memcpy(&rank, bytes.data() + 16, sizeof rank);
  }
  if (bytes.size() < pairs_file_header_bytes ||
      std::memcmp(bytes.data(), pairs_file_magic, sizeof pairs_file_magic) != 0 ||
      (kinds != pair_kind_count && kinds != pairs_kinds_before_partitioned) || ranks == 0 ||
      ranks > pairs_file_ranks_of(kinds) || rank < 0 || static_cast<uint32_t>(rank) >= ranks ||
      bytes.size() != pairs_file_header_bytes + sizeof(strata_pair_sum) * kinds * ranks) {
    error = path + ": not a pairs file of this version (or cut short)";
    return false;
  }
  std::vector<strata_pair_sum> sums(static_cast<size_t>(kinds) * ranks);
  std::memcpy(sums.data(), bytes.data() + pairs_file_header_bytes,
              sums.size() * sizeof(strata_pair_sum));
  // A file of a job started under an earlier Strata has no partitioned kind: its rows from
  // that kind's place on are the next kinds', and the partitioned row is empty.
  const std::vector<strata_pair_sum> none(kinds == pair_kind_count ? 0 : ranks);
  const strata_pair_sum* rows[pair_kind_count];
  for (int k = 0, row = 0; k < pair_kind_count; ++k) {
    if (kinds != pair_kind_count && k == pair_kind_partitioned)
      rows[k] = none.data();
    else
      rows[k] = sums.data() + static_cast<size_t>(row++) * ranks;
  }
  out = rank_pairs(static_cast<uint32_t>(rank), rows, ranks);
  return true;
}

uint64_t pair_figures::total_messages() const {
  uint64_t total = 0;
  for (const uint64_t m : messages)
    total += m;
  return total;
}

uint64_t pair_figures::total_bytes() const {
  uint64_t total = 0;
  for (const uint64_t b : bytes)
    total += b;
  return total;
}

namespace {

// Heaviest first; ties in rank order, so that every run keeps the same pairs.
bool heavier(const pair_figures& a, const pair_figures& b) {
  const uint64_t ab = a.total_bytes(), bb = b.total_bytes();
  if (ab != bb)
    return ab > bb;
  const uint64_t am = a.total_messages(), bm = b.total_messages();
  if (am != bm)
    return am > bm;
  return a.from != b.from ? a.from < b.from : a.to < b.to;
}

void cut_to(pair_list& list, size_t limit) {
  if (list.pairs.size() <= limit)
    return;
  std::nth_element(list.pairs.begin(), list.pairs.begin() + static_cast<std::ptrdiff_t>(limit),
                   list.pairs.end(), heavier);
  for (size_t i = limit; i < list.pairs.size(); ++i) {
    ++list.rest.pairs;
    list.rest.messages += list.pairs[i].total_messages();
    list.rest.bytes += list.pairs[i].total_bytes();
  }
  list.pairs.resize(limit);
}

constexpr size_t words_per_pair = 1 + 2 * pair_kind_count;

} // namespace

pair_list rank_pairs(uint32_t from, const strata_pair_sum* const rows[pair_kind_count],
                     uint32_t ranks, size_t limit) {
  pair_list list;
  for (uint32_t to = 0; to < ranks; ++to) {
    pair_figures p;
    bool any = false;
    for (int k = 0; k < pair_kind_count; ++k) {
      if (rows[k] == nullptr || rows[k][to].messages == 0)
        continue;
      p.messages[k] = rows[k][to].messages;
      p.bytes[k] = rows[k][to].bytes;
      any = true;
    }
    if (!any)
      continue;
    p.from = from;
    p.to = to;
    list.pairs.push_back(p);
  }
  cut_to(list, limit);
  return list;
}

void combine_pairs(pair_list& into, pair_list more, size_t limit) {
  into.pairs.insert(into.pairs.end(), more.pairs.begin(), more.pairs.end());
  into.rest.pairs += more.rest.pairs;
  into.rest.messages += more.rest.messages;
  into.rest.bytes += more.rest.bytes;
  cut_to(into, limit);
}

std::string write_pair_list(const pair_list& list) {
  std::string out;
  out.reserve((4 + words_per_pair * list.pairs.size()) * sizeof(uint64_t));
  append_word(out, list.pairs.size());
  append_word(out, list.rest.pairs);
  append_word(out, list.rest.messages);
  append_word(out, list.rest.bytes);
  for (const pair_figures& p : list.pairs) {
    append_word(out, (uint64_t{p.from} << 32) | p.to);
    for (int k = 0; k < pair_kind_count; ++k) {
      append_word(out, p.messages[k]);
      append_word(out, p.bytes[k]);
    }
  }
  return out;
}

bool read_pair_list(std::string_view bytes, pair_list& out) {
  uint64_t count = 0;
  if (!take_word(bytes, count) || !take_word(bytes, out.rest.pairs) ||
      !take_word(bytes, out.rest.messages) || !take_word(bytes, out.rest.bytes) ||
      bytes.size() != count * words_per_pair * sizeof(uint64_t))
    return false;
  out.pairs.resize(static_cast<size_t>(count));
  for (pair_figures& p : out.pairs) {
    uint64_t ends = 0;
    take_word(bytes, ends);
    p.from = static_cast<uint32_t>(ends >> 32);
    p.to = static_cast<uint32_t>(ends);
    for (int k = 0; k < pair_kind_count; ++k) {
      take_word(bytes, p.messages[k]);
      take_word(bytes, p.bytes[k]);
    }
  }
  return true;
}

record::communication_section communication_of(const pair_list& list) {
  std::vector<pair_figures> sorted = list.pairs;
  std::sort(sorted.begin(), sorted.end(), [](const pair_figures& a, const pair_figures& b) {
    return a.from != b.from ? a.from < b.from : a.to < b.to;
  });
  record::communication_section section;
  for (const pair_figures& p : sorted) {
    // `pairs` is point-to-point traffic (what a trace's messages give too); a one-sided
    // operation moves data without a message at its target, so it is kept in its kind alone.
    record::message_pair two_sided{p.from, p.to, 0, 0};
    for (int k = 0; k < pair_kind_count; ++k) {
      if (p.messages[k] == 0)
        continue;
      section.by_kind[pair_kind_names[k]].push_back({p.from, p.to, p.messages[k], p.bytes[k]});
      if (common::is_point_to_point(k)) {
        two_sided.messages += p.messages[k];
        two_sided.bytes += p.bytes[k];
      }
    }
    if (two_sided.messages != 0)
      section.pairs.push_back(two_sided);
  }
  if (list.rest.pairs != 0)
    section.unlisted = list.rest;
  return section;
}

} // namespace strata::profiler
