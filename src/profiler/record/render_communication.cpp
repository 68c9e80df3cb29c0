#include "profiler/record/render_communication.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>

namespace strata::record {

namespace {

constexpr size_t shown_pairs = 20;
constexpr size_t shown_ranks = 20;

struct rank_traffic {
  std::uint64_t rank = 0;
  std::uint64_t sent_messages = 0, sent_bytes = 0, received_messages = 0, received_bytes = 0;
  std::vector<std::uint64_t> neighbours; // sent to or received from, sorted, once each
  std::uint64_t bytes() const { return sent_bytes + received_bytes; }
};

std::string percent(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? "-"
                    : fmt::format("{:.1f}%",
                                  100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

// min / mean / max of a figure over all ranks of the job (ranks without traffic count as 0).
std::string spread(const std::vector<rank_traffic>& by_rank, std::uint64_t ranks,
                   std::uint64_t (*figure)(const rank_traffic&)) {
  std::uint64_t min = by_rank.size() < ranks ? 0 : UINT64_MAX, max = 0, sum = 0;
  for (const rank_traffic& r : by_rank) {
    const std::uint64_t v = figure(r);
    min = std::min(min, v);
    max = std::max(max, v);
    sum += v;
  }
  if (by_rank.empty())
    min = 0;
  const double mean = ranks == 0 ? 0 : static_cast<double>(sum) / static_cast<double>(ranks);
  return fmt::format("min {}, mean {:.1f}, max {}", min, mean, max);
}

} // namespace

std::vector<communication_table> communication_tables(const communication_section& section,
                                                      std::uint64_t ranks) {
  std::vector<communication_table> out;
  if (section.pairs.empty() && !section.unlisted)
    return out;
  const std::uint64_t listed_bytes =
      std::accumulate(section.pairs.begin(), section.pairs.end(), std::uint64_t{0},
                      [](std::uint64_t sum, const message_pair& p) { return sum + p.bytes; });
  const std::uint64_t all_bytes = listed_bytes + (section.unlisted ? section.unlisted->bytes : 0);
  const std::string partial =
      section.unlisted
          ? fmt::format("; the record lists the {} heaviest pairs: {} more pairs ({} messages, {} "
                        "bytes) are summed, not listed, and not in these figures",
                        section.pairs.size(), section.unlisted->pairs, section.unlisted->messages,
                        section.unlisted->bytes)
          : "";

  std::vector<const message_pair*> order;
  for (const message_pair& p : section.pairs)
    order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const message_pair* a, const message_pair* b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->messages > b->messages;
  });
  communication_table heaviest{"Point-to-point pairs by bytes",
                               true,
                               {{"from", "to", "messages", "bytes", "of all bytes"}},
                               ""};
  for (size_t i = 0; i < order.size() && i < shown_pairs; ++i)
    heaviest.rows.push_back({std::to_string(order[i]->from), std::to_string(order[i]->to),
                             std::to_string(order[i]->messages), std::to_string(order[i]->bytes),
                             percent(order[i]->bytes, all_bytes)});
  heaviest.note =
      (order.size() > shown_pairs
           ? fmt::format("{} more pairs in the record", order.size() - shown_pairs)
           : std::string()) +
      (section.unlisted
           ? std::string(order.size() > shown_pairs ? "" : "all listed pairs shown") + partial
           : "");
  out.push_back(std::move(heaviest));

  // Per rank: what it sent and received, and with how many ranks.
  std::vector<rank_traffic> by_rank;
  const auto at = [&](std::uint64_t rank) -> rank_traffic& {
    auto it = std::lower_bound(by_rank.begin(), by_rank.end(), rank,
                               [](const rank_traffic& r, std::uint64_t k) { return r.rank < k; });
    if (it == by_rank.end() || it->rank != rank)
      it = by_rank.insert(it, rank_traffic{});
    it->rank = rank;
    return *it;
  };
  for (const message_pair& p : section.pairs) {
    rank_traffic& from = at(p.from);
    from.sent_messages += p.messages;
    from.sent_bytes += p.bytes;
    from.neighbours.push_back(p.to);
    rank_traffic& to = at(p.to);
    to.received_messages += p.messages;
    to.received_bytes += p.bytes;
    to.neighbours.push_back(p.from);
  }
  for (rank_traffic& r : by_rank) {
    std::sort(r.neighbours.begin(), r.neighbours.end());
    r.neighbours.erase(std::unique(r.neighbours.begin(), r.neighbours.end()), r.neighbours.end());
  }
  std::vector<const rank_traffic*> busiest;
  busiest.reserve(by_rank.size());
  for (const rank_traffic& r : by_rank)
    busiest.push_back(&r);
  const bool all_ranks = busiest.size() <= shown_ranks;
  if (!all_ranks) {
    std::stable_sort(
        busiest.begin(), busiest.end(),
        [](const rank_traffic* a, const rank_traffic* b) { return a->bytes() > b->bytes(); });
    busiest.resize(shown_ranks);
  }
  communication_table balance{all_ranks ? "Point-to-point traffic by rank"
                                        : "Point-to-point traffic of the busiest ranks",
                              true,
                              {{"rank", "sent msgs", "sent bytes", "recv msgs", "recv bytes",
                                "sent/recv bytes", "neighbours"}},
                              ""};
  for (const rank_traffic* r : busiest)
    balance.rows.push_back(
        {std::to_string(r->rank), std::to_string(r->sent_messages), std::to_string(r->sent_bytes),
         std::to_string(r->received_messages), std::to_string(r->received_bytes),
         r->received_bytes == 0 ? "-"
                                : fmt::format("{:.2f}", static_cast<double>(r->sent_bytes) /
                                                            static_cast<double>(r->received_bytes)),
         std::to_string(r->neighbours.size())});
  balance.note = "over the job's " + std::to_string(ranks) + " ranks: bytes sent " +
                 spread(by_rank, ranks, [](const rank_traffic& r) { return r.sent_bytes; }) +
                 "; bytes received " +
                 spread(by_rank, ranks, [](const rank_traffic& r) { return r.received_bytes; }) +
                 "; neighbours " +
                 spread(by_rank, ranks,
                        [](const rank_traffic& r) {
                          return static_cast<std::uint64_t>(r.neighbours.size());
                        }) +
                 partial;
  out.push_back(std::move(balance));
  return out;
}

} // namespace strata::record
