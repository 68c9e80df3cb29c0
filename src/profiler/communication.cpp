#include "profiler/communication.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace strata::profiler {

int pair_kind_of(std::string_view routine) {
  if (routine.ends_with("_c"))
    routine.remove_suffix(2);
  static constexpr std::array<std::string_view, 8> point_to_point = {
      "MPI_Send",  "MPI_Bsend",  "MPI_Ssend",  "MPI_Rsend",
      "MPI_Isend", "MPI_Ibsend", "MPI_Issend", "MPI_Irsend"};
  if (std::find(point_to_point.begin(), point_to_point.end(), routine) != point_to_point.end())
    return pair_kind_point_to_point;
  if (routine == "MPI_Sendrecv" || routine == "MPI_Sendrecv_replace")
    return pair_kind_sendrecv;
  return -1;
}

sent_pairs::~sent_pairs() {
  if (sums_ != nullptr)
    ::munmap(sums_, bytes_);
}

bool sent_pairs::open(uint32_t ranks) {
  if (sums_ != nullptr || ranks == 0)
    return sums_ != nullptr;
  const size_t bytes = sizeof(strata_pair_sum) * pair_kind_count * ranks;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return false;
  sums_ = static_cast<strata_pair_sum*>(p);
  ranks_ = ranks;
  bytes_ = bytes;
  return true;
}

void sent_pairs::clear() {
  if (sums_ != nullptr && ::madvise(sums_, bytes_, MADV_DONTNEED) != 0)
    std::memset(static_cast<void*>(sums_), 0, bytes_);
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

void append_word(std::string& out, uint64_t word) {
  char raw[sizeof word];
  std::memcpy(raw, &word, sizeof word);
  out.append(raw, sizeof word);
}

bool take_word(std::string_view& in, uint64_t& word) {
  if (in.size() < sizeof word)
    return false;
  std::memcpy(&word, in.data(), sizeof word);
  in.remove_prefix(sizeof word);
  return true;
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
    section.pairs.push_back({p.from, p.to, p.total_messages(), p.total_bytes()});
    for (int k = 0; k < pair_kind_count; ++k)
      if (p.messages[k] != 0)
        section.by_kind[pair_kind_names[k]].push_back({p.from, p.to, p.messages[k], p.bytes[k]});
  }
  if (list.rest.pairs != 0)
    section.unlisted = list.rest;
  return section;
}

} // namespace strata::profiler
