#include "profiler/record/render_communication.hpp"

#include "common/message_kinds.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <optional>

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

std::string kind_title(const std::string& kind) {
  std::string title = kind;
  std::replace(title.begin(), title.end(), '_', ' ');
  return title;
}

// Each kind's pairs, messages and bytes (a one-sided kind's "messages" are its operations).
communication_table kinds_table(const communication_section& section) {
  communication_table kinds{
      "Traffic by kind", true, {{"kind", "pairs", "messages or operations", "bytes"}}, ""};
  for (const auto& [kind, pairs] : section.by_kind) {
    std::uint64_t messages = 0, bytes = 0;
    for (const message_pair& p : pairs) {
      messages += p.messages;
      bytes += p.bytes;
    }
    kinds.rows.push_back({kind_title(kind), std::to_string(pairs.size()), std::to_string(messages),
                          std::to_string(bytes)});
  }
  kinds.note = "one-sided kinds (put, get, accumulate) count operations from origin to target, "
               "with the bytes of the origin's data, and are not in the point-to-point tables";
  if (section.unlisted)
    kinds.note += "; only the pairs the record lists";
  return kinds;
}

// The heaviest one-sided pairs, each kind apart; none when the job made no such operation.
std::optional<communication_table> one_sided_table(const communication_section& section) {
  struct row {
    const std::string* kind;
    const message_pair* pair;
  };
  std::vector<row> rows;
  for (const auto& [kind, pairs] : section.by_kind)
    if (common::is_one_sided(kind)) // which `pairs` leaves out
      for (const message_pair& p : pairs)
        rows.push_back({&kind, &p});
  if (rows.empty())
    return std::nullopt;
  std::stable_sort(rows.begin(), rows.end(), [](const row& a, const row& b) {
    return a.pair->bytes != b.pair->bytes ? a.pair->bytes > b.pair->bytes
                                          : a.pair->messages > b.pair->messages;
  });
  communication_table one_sided{"One-sided operations by bytes (origin to target)",
                                true,
                                {{"origin", "target", "kind", "operations", "bytes"}},
                                ""};
  for (size_t i = 0; i < rows.size() && i < shown_pairs; ++i)
    one_sided.rows.push_back({std::to_string(rows[i].pair->from), std::to_string(rows[i].pair->to),
                              *rows[i].kind, std::to_string(rows[i].pair->messages),
                              std::to_string(rows[i].pair->bytes)});
  if (rows.size() > shown_pairs)
    one_sided.note = fmt::format("{} more in the record", rows.size() - shown_pairs);
  return one_sided;
}

void point_to_point_tables(const communication_section& section, std::uint64_t ranks,
                           std::vector<communication_table>& out);

constexpr size_t shown_communicators = 20;
constexpr size_t communicators_shown_per_member = 5;

std::string calls_range(const communicator_collectives& c) {
  return c.calls_min == c.calls_max ? std::to_string(c.calls_max)
                                    : fmt::format("{}-{}", c.calls_min, c.calls_max);
}

// The heaviest communicators: members, calls per member, bytes, and their balance over the
// members (the most a member sent over the mean); then each member of the heaviest small ones.
void collectives_tables(const collectives_section& section, std::vector<communication_table>& out) {
  communication_table heaviest{"Collectives by communicator (bytes sent)",
                               true,
                               {{"members", "size", "calls per member", "bytes",
                                 "bytes per member min / mean / max", "max at rank", "max / mean"}},
                               ""};
  for (size_t i = 0; i < section.communicators.size() && i < shown_communicators; ++i) {
    const communicator_collectives& c = section.communicators[i];
    const member_bytes_spread& b = c.bytes_per_member;
    std::string size = std::to_string(c.size);
    if (c.members_reported != c.size)
      size += fmt::format(" ({} reported)", c.members_reported);
    heaviest.rows.push_back(
        {c.members, size, calls_range(c), std::to_string(c.bytes),
         fmt::format("{} / {:.1f} / {}", b.min, b.mean, b.max), std::to_string(b.max_rank),
         b.mean > 0 ? fmt::format("{:.2f}", static_cast<double>(b.max) / b.mean) : "-"});
  }
  std::vector<std::string> notes;
  if (section.communicators.size() > shown_communicators)
    notes.push_back(fmt::format("{} more communicators in the record",
                                section.communicators.size() - shown_communicators));
  if (section.unlisted)
    notes.push_back(fmt::format("communicators the record leaves out: {} calls, {} bytes",
                                section.unlisted->calls, section.unlisted->bytes));
  if (section.unattributed)
    notes.push_back(fmt::format("on intercommunicators or communicators not known: {} calls, {} "
                                "bytes",
                                section.unattributed->calls, section.unattributed->bytes));
  for (const std::string& n : notes)
    heaviest.note += (heaviest.note.empty() ? "" : "; ") + n;
  if (heaviest.rows.size() > 1 || !heaviest.note.empty())
    out.push_back(std::move(heaviest));
  communication_table members{
      "Collectives per member", true, {{"members", "rank", "calls", "bytes"}}, ""};
  size_t shown = 0;
  for (const communicator_collectives& c : section.communicators) {
    if (c.per_member.empty())
      continue;
    if (shown++ == communicators_shown_per_member)
      break;
    for (const member_collectives& m : c.per_member)
      members.rows.push_back(
          {c.members, std::to_string(m.rank), std::to_string(m.calls), std::to_string(m.bytes)});
  }
  if (members.rows.size() > 1)
    out.push_back(std::move(members));
}

} // namespace

std::vector<communication_table> communication_tables(const communication_section& section,
                                                      std::uint64_t ranks) {
  std::vector<communication_table> out;
  if (!section.pairs.empty() || section.unlisted)
    point_to_point_tables(section, ranks, out);
  if (section.by_kind.size() > 1 || (!section.by_kind.empty() && out.empty()))
    out.push_back(kinds_table(section));
  if (std::optional<communication_table> one_sided = one_sided_table(section))
    out.push_back(std::move(*one_sided));
  if (section.collectives)
    collectives_tables(*section.collectives, out);
  return out;
}

namespace {

void point_to_point_tables(const communication_section& section, std::uint64_t ranks,
                           std::vector<communication_table>& out) {
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
}

} // namespace

} // namespace strata::record

namespace strata::record {

namespace {

constexpr std::uint64_t heat_map_cells = 256; // per side at most: ranks beyond are grouped

// Light to dark blue on a log scale of the bytes (a few heavy pairs leave the rest visible).
std::string heat_colour(std::uint64_t bytes, std::uint64_t most) {
  const double t =
      most <= 1 ? 1.0
                : std::log1p(static_cast<double>(bytes)) / std::log1p(static_cast<double>(most));
  auto mix = [t](int light, int dark) {
    return static_cast<int>(std::lround(light + (dark - light) * std::clamp(t, 0.0, 1.0)));
  };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(0xde, 0x08), mix(0xeb, 0x30), mix(0xf7, 0x6b));
}

std::string rank_range(std::uint64_t first, std::uint64_t last) {
  return first == last ? fmt::format("rank {}", first) : fmt::format("ranks {}-{}", first, last);
}

} // namespace

std::string communication_heat_map_svg(const communication_section& section, std::uint64_t ranks) {
  if (section.pairs.empty() || ranks == 0)
    return "";
  const std::uint64_t group = (ranks + heat_map_cells - 1) / heat_map_cells;
  const std::uint64_t cells = (ranks + group - 1) / group;
  const std::uint64_t cell = std::max<std::uint64_t>(2, 512 / cells); // pixels
  const std::uint64_t side = cells * cell, margin = 48;
  struct block {
    std::uint64_t messages = 0, bytes = 0;
  };
  std::map<std::pair<std::uint64_t, std::uint64_t>, block> blocks;
  for (const message_pair& p : section.pairs) {
    block& b = blocks[{p.from / group, p.to / group}];
    b.messages += p.messages;
    b.bytes += p.bytes;
  }
  std::uint64_t most = 0;
  for (const auto& [at, b] : blocks)
    most = std::max(most, b.bytes);
  const std::string scope =
      group == 1
          ? "one cell per pair of ranks"
          : fmt::format("each cell sums {} x {} ranks, {} cells a side", group, group, cells);
  std::string out = fmt::format(
      "<figure class=\"heatmap\"><svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\" "
      "width=\"{0}\" height=\"{0}\" viewBox=\"0 0 {0} {0}\" role=\"img\" aria-label=\"Bytes sent "
      "from each rank (rows) to each rank (columns)\">\n<rect x=\"{1}\" y=\"{1}\" width=\"{2}\" "
      "height=\"{2}\" fill=\"#fff\" stroke=\"#999\"/>\n",
      side + margin + 8, margin, side);
  for (const auto& [at, b] : blocks) {
    const std::uint64_t from = at.first * group, to = at.second * group;
    out += fmt::format(
        "<rect class=\"pair\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} "
        "to {}: {} bytes in {} messages</title></rect>\n",
        margin + at.second * cell, margin + at.first * cell, cell, cell, heat_colour(b.bytes, most),
        rank_range(from, std::min(ranks, from + group) - 1),
        rank_range(to, std::min(ranks, to + group) - 1), b.bytes, b.messages);
  }
  // The first and last rank on each axis, and the axes' names.
  const auto last = ranks - 1;
  out += fmt::format(
      "<text x=\"{0}\" y=\"{1}\" font-size=\"11\">0</text><text x=\"{2}\" y=\"{1}\" "
      "font-size=\"11\" text-anchor=\"end\">{3}</text>"
      "<text x=\"{4}\" y=\"{5}\" font-size=\"11\" text-anchor=\"end\">0</text><text x=\"{4}\" "
      "y=\"{6}\" font-size=\"11\" text-anchor=\"end\">{3}</text>"
      "<text x=\"{7}\" y=\"14\" font-size=\"12\" text-anchor=\"middle\">to rank</text>"
      "<text x=\"12\" y=\"{7}\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 12 "
      "{7})\">from rank</text>\n</svg>\n",
      margin, margin - 4, margin + side, last, margin - 4, margin + 10, margin + side,
      margin + side / 2);
  out += fmt::format("<figcaption>Bytes sent from each rank (rows) to each rank (columns), darker "
                     "for more on a log scale up to {} bytes; {}; hover a cell for its "
                     "figures.{}</figcaption></figure>\n",
                     most, scope,
                     section.unlisted ? " Pairs the record does not list are not drawn." : "");
  return out;
}

} // namespace strata::record
