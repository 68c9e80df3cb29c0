#include "profiler/collectives.hpp"
#include "profiler/tree_words.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <map>

namespace strata::profiler {

communicator_sums::~communicator_sums() {
  if (sums_ != nullptr)
    ::munmap(sums_, sizeof(strata_comm_sum) * capacity);
}

bool communicator_sums::open() {
  if (sums_ != nullptr)
    return true;
  void* p = ::mmap(nullptr, sizeof(strata_comm_sum) * capacity, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return false;
  sums_ = static_cast<strata_comm_sum*>(p);
  return true;
}

void communicator_sums::clear() {
  for (uint32_t i = 0; sums_ != nullptr && i < capacity; ++i)
    if (sums_[i].calls != 0) {
      sums_[i].calls = 0;
      sums_[i].bytes = 0;
    }
}

namespace {

// Heaviest first; ties by size, then members, so that every run keeps the same communicators.
bool heavier_communicator(const communicator_total& a, const communicator_total& b) {
  if (a.bytes != b.bytes)
    return a.bytes > b.bytes;
  if (a.calls != b.calls)
    return a.calls > b.calls;
  if (a.size != b.size)
    return a.size > b.size;
  return a.members < b.members;
}

void cut_to(communicator_list& list, size_t limit) {
  if (list.communicators.size() <= limit)
    return;
  std::nth_element(list.communicators.begin(),
                   list.communicators.begin() + static_cast<std::ptrdiff_t>(limit),
                   list.communicators.end(), heavier_communicator);
  for (size_t i = limit; i < list.communicators.size(); ++i) {
    list.rest.calls += list.communicators[i].calls;
    list.rest.bytes += list.communicators[i].bytes;
  }
  list.communicators.resize(limit);
}

void add_sums(record::collective_sums& into, const record::collective_sums& more) {
  into.calls += more.calls;
  into.bytes += more.bytes;
}

// Two parts of one communicator, of different members each.
void merge_into(communicator_total& into, const communicator_total& more) {
  if (more.reported == 0)
    return;
  if (into.reported == 0) {
    into = more;
    return;
  }
  into.reported += more.reported;
  into.calls += more.calls;
  into.bytes += more.bytes;
  into.calls_min = std::min(into.calls_min, more.calls_min);
  into.calls_max = std::max(into.calls_max, more.calls_max);
  // Ties go to the lower rank, whatever the order the parts arrive in.
  if (more.bytes_min < into.bytes_min ||
      (more.bytes_min == into.bytes_min && more.bytes_min_rank < into.bytes_min_rank)) {
    into.bytes_min = more.bytes_min;
    into.bytes_min_rank = more.bytes_min_rank;
  }
  if (more.bytes_max > into.bytes_max ||
      (more.bytes_max == into.bytes_max && more.bytes_max_rank < into.bytes_max_rank)) {
    into.bytes_max = more.bytes_max;
    into.bytes_max_rank = more.bytes_max_rank;
  }
  std::vector<member_sum> merged;
  merged.reserve(into.per_member.size() + more.per_member.size());
  std::merge(into.per_member.begin(), into.per_member.end(), more.per_member.begin(),
             more.per_member.end(), std::back_inserter(merged),
             [](const member_sum& a, const member_sum& b) { return a.rank < b.rank; });
  into.per_member = std::move(merged);
}

// The members of a group as the core gave it (null: the world's first `size` ranks), or
// nothing when it is not a group of distinct ranks of the world holding `rank`.
std::vector<rank_run> members_of(const strata_comm_sum& sum, uint32_t rank, uint32_t world_size) {
  if (sum.size <= 0 || static_cast<uint32_t>(sum.size) > world_size)
    return {};
  const auto size = static_cast<uint32_t>(sum.size);
  if (sum.world_ranks == nullptr)
    return rank < size ? std::vector<rank_run>{{0, size - 1}} : std::vector<rank_run>{};
  std::vector<uint32_t> ranks(size);
  for (uint32_t i = 0; i < size; ++i) {
    if (sum.world_ranks[i] < 0 || static_cast<uint32_t>(sum.world_ranks[i]) >= world_size)
      return {};
    ranks[i] = static_cast<uint32_t>(sum.world_ranks[i]);
  }
  std::sort(ranks.begin(), ranks.end());
  if (std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end() ||
      !std::binary_search(ranks.begin(), ranks.end(), rank))
    return {};
  return common::runs_of(ranks);
}

constexpr uint64_t low_half = 0xffffffffULL;

} // namespace

communicator_list rank_communicators(uint32_t rank, uint32_t world_size,
                                     const strata_comm_sum* sums, uint32_t count, size_t limit) {
  communicator_list list;
  std::map<std::vector<rank_run>, record::collective_sums> by_members;
  for (uint32_t id = 0; sums != nullptr && id < count; ++id) {
    const strata_comm_sum& sum = sums[id];
    if (sum.calls == 0)
      continue;
    std::vector<rank_run> members;
    if (id != 0 && id + 1 != count && (sum.flags & STRATA_EVENT_INTERCOMM) == 0)
      members = members_of(sum, rank, world_size);
    record::collective_sums& into = members.empty() ? list.unattributed : by_members[members];
    into.calls += sum.calls;
    into.bytes += sum.bytes;
  }
  for (auto& [members, figures] : by_members) {
    communicator_total c;
    c.size = static_cast<uint32_t>(common::ranks_in(members));
    c.members = members;
    c.reported = 1;
    c.calls = c.calls_min = c.calls_max = figures.calls;
    c.bytes = c.bytes_min = c.bytes_max = figures.bytes;
    c.bytes_min_rank = c.bytes_max_rank = rank;
    if (c.size <= collectives_per_member_limit)
      c.per_member.push_back({rank, figures.calls, figures.bytes});
    list.communicators.push_back(std::move(c));
  }
  cut_to(list, limit);
  return list;
}

void combine_communicators(communicator_list& into, communicator_list more, size_t limit) {
  // By members, without copying them: no push_back below moves the elements (reserved).
  const auto by_members = [](const std::vector<rank_run>* a, const std::vector<rank_run>* b) {
    return *a < *b;
  };
  std::map<const std::vector<rank_run>*, size_t, decltype(by_members)> where(by_members);
  into.communicators.reserve(into.communicators.size() + more.communicators.size());
  for (size_t i = 0; i < into.communicators.size(); ++i)
    where.emplace(&into.communicators[i].members, i);
  for (communicator_total& c : more.communicators) {
    const auto found = where.find(&c.members);
    if (found != where.end()) {
      merge_into(into.communicators[found->second], c);
      continue;
    }
    into.communicators.push_back(std::move(c));
    where.emplace(&into.communicators.back().members, into.communicators.size() - 1);
  }
  add_sums(into.rest, more.rest);
  add_sums(into.unattributed, more.unattributed);
  cut_to(into, limit);
}

std::string write_communicator_list(const communicator_list& list) {
  std::string out;
  append_word(out, list.communicators.size());
  append_word(out, list.rest.calls);
  append_word(out, list.rest.bytes);
  append_word(out, list.unattributed.calls);
  append_word(out, list.unattributed.bytes);
  for (const communicator_total& c : list.communicators) {
    append_word(out, c.members.size());
    append_word(out, c.per_member.size());
    append_word(out, (uint64_t{c.size} << 32) | c.reported);
    append_word(out, c.calls);
    append_word(out, c.bytes);
    append_word(out, c.calls_min);
    append_word(out, c.calls_max);
    append_word(out, c.bytes_min);
    append_word(out, c.bytes_max);
    append_word(out, (uint64_t{c.bytes_min_rank} << 32) | c.bytes_max_rank);
    for (const rank_run& r : c.members)
      append_word(out, (uint64_t{r.first} << 32) | r.last);
    for (const member_sum& m : c.per_member) {
      append_word(out, m.rank);
      append_word(out, m.calls);
      append_word(out, m.bytes);
    }
  }
  return out;
}

bool read_communicator_list(std::string_view bytes, communicator_list& out) {
  out = {};
  uint64_t count = 0;
  if (!take_word(bytes, count) || !take_word(bytes, out.rest.calls) ||
      !take_word(bytes, out.rest.bytes) || !take_word(bytes, out.unattributed.calls) ||
      !take_word(bytes, out.unattributed.bytes) || count > bytes.size() / sizeof(uint64_t))
    return false;
  out.communicators.resize(static_cast<size_t>(count));
  for (communicator_total& c : out.communicators) {
    uint64_t runs = 0, members = 0, sizes = 0, extremes = 0;
    if (!take_word(bytes, runs) || !take_word(bytes, members) || !take_word(bytes, sizes) ||
        !take_word(bytes, c.calls) || !take_word(bytes, c.bytes) ||
        !take_word(bytes, c.calls_min) || !take_word(bytes, c.calls_max) ||
        !take_word(bytes, c.bytes_min) || !take_word(bytes, c.bytes_max) ||
        !take_word(bytes, extremes) || runs == 0 || runs > bytes.size() / sizeof(uint64_t) ||
        members > bytes.size() / sizeof(uint64_t) / 3)
      return false;
    c.size = static_cast<uint32_t>(sizes >> 32);
    c.reported = static_cast<uint32_t>(sizes & low_half);
    c.bytes_min_rank = static_cast<uint32_t>(extremes >> 32);
    c.bytes_max_rank = static_cast<uint32_t>(extremes & low_half);
    c.members.resize(static_cast<size_t>(runs));
    for (rank_run& r : c.members) {
      uint64_t word = 0;
      take_word(bytes, word);
      r = {static_cast<uint32_t>(word >> 32), static_cast<uint32_t>(word & low_half)};
      if (r.last < r.first || (&r != c.members.data() && r.first <= (&r - 1)->last))
        return false;
    }
    if (common::ranks_in(c.members) != c.size || c.reported == 0 || c.reported > c.size ||
        members > c.reported)
      return false;
    c.per_member.resize(static_cast<size_t>(members));
    for (member_sum& m : c.per_member) {
      uint64_t member_rank = 0;
      if (!take_word(bytes, member_rank) || !take_word(bytes, m.calls) ||
          !take_word(bytes, m.bytes) || member_rank > low_half)
        return false;
      m.rank = static_cast<uint32_t>(member_rank);
    }
  }
  return bytes.empty();
}

std::string write_traffic(const pair_list& pairs, const communicator_list& communicators) {
  const std::string first = write_pair_list(pairs);
  std::string out;
  append_word(out, first.size());
  return out + first + write_communicator_list(communicators);
}

bool read_traffic(std::string_view bytes, pair_list& pairs, communicator_list& communicators) {
  uint64_t length = 0;
  return take_word(bytes, length) && length <= bytes.size() &&
         read_pair_list(bytes.substr(0, length), pairs) &&
         read_communicator_list(bytes.substr(length), communicators);
}

record::collectives_section collectives_of(const communicator_list& list) {
  std::vector<communicator_total> sorted = list.communicators;
  std::sort(sorted.begin(), sorted.end(), heavier_communicator);
  record::collectives_section section;
  record::collective_sums unlisted = list.rest;
  size_t runs = 0;
  for (const communicator_total& c : sorted) {
    if (section.communicators.size() == listed_communicators_limit ||
        runs + c.members.size() > listed_member_runs_limit) {
      unlisted.calls += c.calls;
      unlisted.bytes += c.bytes;
      continue;
    }
    runs += c.members.size();
    record::communicator_collectives out;
    out.members = common::rank_ranges_text(c.members);
    out.size = c.size;
    out.members_reported = c.reported;
    out.calls = c.calls;
    out.bytes = c.bytes;
    out.calls_min = c.calls_min;
    out.calls_max = c.calls_max;
    out.bytes_per_member = {c.bytes_min, c.bytes_max, c.bytes_min_rank, c.bytes_max_rank,
                            static_cast<double>(c.bytes) / c.reported};
    for (const member_sum& m : c.per_member)
      out.per_member.push_back({m.rank, m.calls, m.bytes});
    section.communicators.push_back(std::move(out));
  }
  if (unlisted.calls != 0 || unlisted.bytes != 0)
    section.unlisted = unlisted;
  if (list.unattributed.calls != 0)
    section.unattributed = list.unattributed;
  return section;
}

} // namespace strata::profiler
