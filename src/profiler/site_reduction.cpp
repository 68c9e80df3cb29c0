#include "profiler/site_reduction.hpp"

#include <algorithm>
#include <cstring>
#include <ctime>

namespace strata::profiler {

namespace {

// CPU time of this thread: a rank's work, whatever else shares the machine's cores.
uint64_t thread_cpu_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(t.tv_nsec);
}

} // namespace

site_tree_place site_tree_place_of(int rank, int size, int fan_in) {
  fan_in = std::max(fan_in, 1);
  site_tree_place place;
  int first = 0;
  int last = size - 1;
  // Down from rank 0 to the subtree that starts at `rank`.
  for (;;) {
    const int below = last - first; // ranks under `first`
    const int parts = std::min(fan_in, below);
    std::vector<int> starts;
    for (int i = 0, at = first + 1; i < parts; ++i) {
      starts.push_back(at);
      at += below / parts + (i < below % parts ? 1 : 0);
    }
    if (first == rank) {
      place.children = starts;
      place.last_rank = last;
      break;
    }
    const auto child = std::upper_bound(starts.begin(), starts.end(), rank) - 1;
    place.parent = first;
    const auto next = child + 1;
    last = next == starts.end() ? last : *next - 1;
    first = *child;
  }
  for (int n = place.last_rank - rank; n > 0;) { // the longest chain below: ranks shrink by fan_in
    ++place.height;
    n = (n - 1) / fan_in;
  }
  return place;
}

namespace {

void append_word(std::string& bytes, uint64_t word) {
  char raw[sizeof(word)];
  std::memcpy(raw, &word, sizeof(word));
  bytes.append(raw, sizeof(word));
}

bool take_word(std::string_view& bytes, uint64_t& word) {
  if (bytes.size() < sizeof(word))
    return false;
  std::memcpy(&word, bytes.data(), sizeof(word));
  bytes.remove_prefix(sizeof(word));
  return true;
}

} // namespace

std::string write_tree_message(uint64_t ranks, const packed_totals& figures,
                               const std::string& text, std::string_view pairs) {
  std::string bytes;
  bytes.reserve(sizeof(uint64_t) * (1 + figures.size()) + text.size());
  append_word(bytes, ranks);
  // Most figures are zero (histogram bins, routines a subtree never called): a run of zero words
  // is one zero word and the run's length, which keeps most messages short enough for MPI to
  // send them eagerly, without waiting for the parent.
  for (size_t i = 0; i < figures.size();) {
    append_word(bytes, figures[i]);
    if (figures[i] != 0) {
      ++i;
      continue;
    }
    size_t run = 0;
    while (i < figures.size() && figures[i] == 0) {
      ++run;
      ++i;
    }
    append_word(bytes, run);
  }
  append_word(bytes, pairs.size());
  bytes.append(pairs);
  return bytes + text;
}

bool read_tree_message(std::string_view bytes, size_t words, tree_message& out) {
  if (!take_word(bytes, out.ranks) || out.ranks == 0)
    return false;
  out.figures.assign(words, 0);
  for (size_t i = 0; i < words;) {
    uint64_t word = 0;
    if (!take_word(bytes, word))
      return false;
    if (word != 0) {
      out.figures[i++] = word;
      continue;
    }
    uint64_t run = 0;
    if (!take_word(bytes, run) || run == 0 || run > words - i)
      return false;
    i += static_cast<size_t>(run); // already zero
  }
  uint64_t pairs = 0;
  if (!take_word(bytes, pairs) || pairs > bytes.size())
    return false;
  out.pairs.assign(bytes.substr(0, static_cast<size_t>(pairs)));
  bytes.remove_prefix(static_cast<size_t>(pairs));
  out.text.assign(bytes);
  return true;
}

ranks_summary reduce_texts_over_tree(int size, const std::function<std::string(int)>& text_of,
                                     int fan_in, site_tree_costs* costs) {
  std::vector<std::string> sent(static_cast<size_t>(std::max(size, 0)));
  if (costs != nullptr) {
    costs->received_bytes.assign(sent.size(), 0);
    costs->work_ns.assign(sent.size(), 0);
  }
  ranks_summary root;
  // Children have higher ranks than their parent: from the last rank down, every child's
  // summary is ready before its parent needs it, and few wait at once.
  for (int rank = size - 1; rank >= 0; --rank) {
    const std::string own = text_of(rank);
    const uint64_t start = costs != nullptr ? thread_cpu_ns() : 0;
    ranks_summary here;
    here.add_text(own);
    for (const int child : site_tree_place_of(rank, size, fan_in).children) {
      std::string& text = sent[static_cast<size_t>(child)];
      here.add_text(text);
      if (costs != nullptr)
        costs->received_bytes[static_cast<size_t>(rank)] += text.size();
      std::string().swap(text);
    }
    if (rank == 0)
      root = std::move(here);
    else
      sent[static_cast<size_t>(rank)] = summary_text(here);
    if (costs != nullptr)
      costs->work_ns[static_cast<size_t>(rank)] = thread_cpu_ns() - start;
  }
  return root;
}

ranks_summary reduce_texts_over_tree(const std::vector<std::string>& texts, int fan_in,
                                     site_tree_costs* costs) {
  return reduce_texts_over_tree(
      static_cast<int>(texts.size()),
      [&texts](int rank) { return texts[static_cast<size_t>(rank)]; }, fan_in, costs);
}

ranks_summary merge_texts_in_rank_order(int size, const std::function<std::string(int)>& text_of) {
  ranks_summary all;
  for (int rank = 0; rank < size; ++rank)
    all.add_text(text_of(rank));
  return all;
}

ranks_summary merge_texts_in_rank_order(const std::vector<std::string>& texts) {
  return merge_texts_in_rank_order(static_cast<int>(texts.size()),
                                   [&texts](int rank) { return texts[static_cast<size_t>(rank)]; });
}

} // namespace strata::profiler
