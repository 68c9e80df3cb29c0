#include "analyzer/partial.hpp"

#include <string>

namespace strata::analyze {
namespace {

constexpr uint64_t partial_magic = 0x5354524150415254ULL; // "STRAPART"

class word_reader {
public:
  word_reader(const uint64_t* words, size_t count) : words_(words), count_(count) {}
  uint64_t next() {
    if (at_ >= count_)
      throw trace_error("a partial analysis result is cut short");
    return words_[at_++];
  }
  // A count of items of `width` words each that must still fit in what is left.
  uint64_t count(uint64_t width) {
    const uint64_t n = next();
    if (width != 0 && n > (count_ - at_) / width)
      throw trace_error("a partial analysis result holds an impossible count");
    return n;
  }
  [[nodiscard]] bool done() const { return at_ == count_; }

private:
  const uint64_t* words_;
  size_t count_;
  size_t at_ = 0;
};

uint32_t narrow(uint64_t value) {
  if (value > UINT32_MAX)
    throw trace_error("a partial analysis result holds an out-of-range value");
  return static_cast<uint32_t>(value);
}

} // namespace

std::vector<uint64_t> encode_partial(const partial_result& part) {
  std::vector<uint64_t> w{partial_magic,
                          part.events,
                          part.open_at_end,
                          part.unbalanced,
                          part.abandoned_receives,
                          part.foreign_collectives,
                          part.unmatched_sends,
                          part.unmatched_receives,
                          part.messages,
                          part.collectives,
                          part.incomplete_collectives,
                          part.ranks.size()};
  for (size_t i = 0; i < part.ranks.size(); ++i) {
    const rank_tables& t = part.tables[i];
    w.insert(w.end(), {part.ranks[i], t.first, t.last, t.comm_ticks, t.level_counts.size()});
    w.insert(w.end(), t.level_counts.begin(), t.level_counts.end());
    w.push_back(t.ops.size());
    for (const auto& [key, stat] : t.ops)
      w.insert(w.end(), {key, stat.count, stat.ticks});
    w.push_back(t.pairs.size());
    for (const auto& [key, stat] : t.pairs)
      w.insert(w.end(), {key, stat.messages, stat.bytes});
  }
  w.push_back(part.waits.size());
  for (const auto& [key, value] : part.waits)
    w.insert(w.end(), {key.kind, key.rank, key.region, key.site, value.first, value.second});
  return w;
}

partial_result decode_partial(const uint64_t* words, size_t count) {
  word_reader in(words, count);
  if (in.next() != partial_magic)
    throw trace_error("not a partial analysis result");
  partial_result p;
  p.events = in.next();
  p.open_at_end = in.next();
  p.unbalanced = in.next();
  p.abandoned_receives = in.next();
  p.foreign_collectives = in.next();
  p.unmatched_sends = in.next();
  p.unmatched_receives = in.next();
  p.messages = in.next();
  p.collectives = in.next();
  p.incomplete_collectives = in.next();
  const uint64_t ranks = in.count(7);
  for (uint64_t i = 0; i < ranks; ++i) {
    p.ranks.push_back(narrow(in.next()));
    rank_tables& t = p.tables.emplace_back();
    t.first = in.next();
    t.last = in.next();
    t.comm_ticks = in.next();
    t.level_counts.resize(in.count(1));
    for (uint64_t& n : t.level_counts)
      n = in.next();
    const uint64_t ops = in.count(3);
    t.ops.reserve(ops);
    for (uint64_t k = 0; k < ops; ++k) {
      const uint64_t key = in.next();
      op_stat& stat = t.ops[key];
      stat.count = in.next();
      stat.ticks = in.next();
    }
    const uint64_t pairs = in.count(3);
    t.pairs.reserve(pairs);
    for (uint64_t k = 0; k < pairs; ++k) {
      const uint64_t key = in.next();
      if ((key >> 32) >= pair_kind_count)
        throw trace_error("a partial analysis result names an unknown kind of message");
      pair_stat& stat = t.pairs[key];
      stat.messages += in.next();
      stat.bytes += in.next();
    }
  }
  const uint64_t waits = in.count(6);
  for (uint64_t i = 0; i < waits; ++i) {
    wait_key key{};
    const uint64_t kind = in.next();
    if (kind >= pattern_count)
      throw trace_error("a partial analysis result names an unknown wait state");
    key.kind = static_cast<uint8_t>(kind);
    key.rank = narrow(in.next());
    key.region = narrow(in.next());
    key.site = narrow(in.next());
    auto& value = p.waits[key];
    value.first += in.next();
    value.second += in.next();
  }
  if (!in.done())
    throw trace_error("a partial analysis result has words left over");
  return p;
}

report assemble_report(const definitions& defs, std::vector<partial_result>& parts) {
  partial_result sum;
  std::vector<const rank_tables*> tables(defs.ranks(), nullptr);
  for (partial_result& p : parts) {
    sum.events += p.events;
    sum.open_at_end += p.open_at_end;
    sum.unbalanced += p.unbalanced;
    sum.abandoned_receives += p.abandoned_receives;
    sum.foreign_collectives += p.foreign_collectives;
    sum.unmatched_sends += p.unmatched_sends;
    sum.unmatched_receives += p.unmatched_receives;
    sum.messages += p.messages;
    sum.collectives += p.collectives;
    sum.incomplete_collectives += p.incomplete_collectives;
    for (size_t i = 0; i < p.ranks.size(); ++i) {
      if (p.ranks[i] >= tables.size() || tables[p.ranks[i]] != nullptr)
        throw trace_error("the analysis processes' shares overlap or name rank " +
                          std::to_string(p.ranks[i]) + " of " + std::to_string(tables.size()));
      tables[p.ranks[i]] = &p.tables[i];
    }
    for (const auto& [key, value] : p.waits) {
      auto& w = sum.waits[key];
      w.first += value.first;
      w.second += value.second;
    }
  }
  for (size_t r = 0; r < tables.size(); ++r)
    if (tables[r] == nullptr)
      throw trace_error("no analysis process read rank " + std::to_string(r));

  report out;
  out.archive = defs.archive;
  out.creator = defs.creator;
  out.ranks = static_cast<uint32_t>(defs.ranks());
  out.events = sum.events;
  out.messages = sum.messages;
  out.collectives = sum.collectives;
  out.unmatched_sends = sum.unmatched_sends;
  out.unmatched_receives = sum.unmatched_receives;
  out.incomplete_collectives = sum.incomplete_collectives;
  out.truncated = truncation_line(defs.notes, defs.global_offset, defs.timer_resolution);
  if (!out.truncated.empty())
    out.warnings.push_back(out.truncated);
  out.dropped_events = defs.notes.dropped();
  for (const rank_drops& d : defs.notes.drops)
    out.truncation.push_back({d.rank, d.events, d.after != 0 ? defs.seconds(d.after) : -1,
                              d.before != 0 ? defs.seconds(d.before) : -1});
  out.counted = defs.notes.counted;
  if (sum.open_at_end)
    out.warnings.push_back(std::to_string(sum.open_at_end) +
                           " operations were still open at the end of the trace; closed at each "
                           "rank's last event");
  if (sum.unbalanced)
    out.warnings.push_back(std::to_string(sum.unbalanced) +
                           " events did not nest (a leave without its enter, or a message or "
                           "collective outside any operation)");
  if (sum.abandoned_receives)
    out.warnings.push_back(std::to_string(sum.abandoned_receives) +
                           " receive requests were posted but not completed within the next " +
                           std::to_string(max_reorder) + " receives of their rank");
  if (sum.foreign_collectives)
    out.warnings.push_back(std::to_string(sum.foreign_collectives) +
                           " collectives on a communicator their rank is not a member of");
  if (out.unmatched_sends || out.unmatched_receives)
    out.warnings.push_back(std::to_string(out.unmatched_sends) + " sends and " +
                           std::to_string(out.unmatched_receives) +
                           " receives have no partner in the trace");
  if (out.incomplete_collectives)
    out.warnings.push_back(std::to_string(out.incomplete_collectives) +
                           " collective instances were not entered by every member");
  fill_tables(defs, tables, sum.waits, out);
  return out;
}

} // namespace strata::analyze
