#include "monitor/engine.hpp"

#include "monitor/wire.hpp"

#include <algorithm>

namespace strata::overlay {

std::string encode_packet(const packet& p) {
  wire_writer w;
  w.u8(static_cast<uint8_t>(p.kind));
  w.u64(p.round);
  w.u32(p.ranks);
  w.buffer() += p.payload;
  return w.take();
}

packet decode_packet(std::string_view bytes) {
  wire_reader r(bytes);
  packet p;
  const uint8_t kind = r.u8();
  if (kind < static_cast<uint8_t>(packet_kind::profile) ||
      kind > static_cast<uint8_t>(packet_kind::hang_states))
    throw wire_error("unknown packet kind " + std::to_string(kind));
  p.kind = static_cast<packet_kind>(kind);
  p.round = r.u64();
  p.ranks = r.u32();
  p.payload = std::string(bytes.substr(bytes.size() - r.remaining()));
  return p;
}

node_engine::node_engine(const filter& f, int children, bool leaf_children, bool root)
    : filter_(f), leaf_children_(leaf_children), root_(root),
      passed_(static_cast<size_t>(std::max(children, 0)), 0),
      finished_(static_cast<size_t>(std::max(children, 0)), false) {
  done_ = children <= 0 && !root_;
}

void node_engine::on_child(int child, packet p, std::vector<node_output>& out) {
  if (child < 0 || child >= static_cast<int>(passed_.size()))
    return;
  uint64_t& passed = passed_[static_cast<size_t>(child)];
  switch (p.kind) {
  case packet_kind::fin:
    passed = UINT64_MAX;
    finished_[static_cast<size_t>(child)] = true;
    break;
  case packet_kind::profile:
  case packet_kind::up_a: {
    if (p.round < passed) // out of order or repeated: the ordering contract was broken
      return;
    passed = p.round + 1;
    round_state& r = rounds_[p.round];
    r.bytes += p.payload.size();
    r.participants.push_back(child);
    if (p.kind == packet_kind::profile) {
      rank_profile prof = decode_profile(p.payload);
      r.a_parts.push_back(filter_.leaf(prof));
      r.ranks += 1;
      if (filter_.three_phase())
        r.kept.push_back(std::move(prof));
    } else {
      r.a_parts.push_back(std::move(p.payload));
      r.ranks += p.ranks;
    }
    break;
  }
  case packet_kind::up_c: {
    auto it = rounds_.find(p.round);
    if (it == rounds_.end())
      return;
    it->second.bytes += p.payload.size();
    it->second.c_parts.push_back(std::move(p.payload));
    if (it->second.bounds_in && it->second.c_parts.size() == it->second.c_expected)
      finish_c(p.round, it->second, out);
    break;
  }
  default:
    return;
  }
  advance(out);
}

void node_engine::on_parent(const packet& p, std::vector<node_output>& out) {
  if (p.kind != packet_kind::bounds)
    return;
  auto it = rounds_.find(p.round);
  if (it == rounds_.end())
    return;
  apply_bounds(p.round, it->second, p.payload, out);
  advance(out);
}

// Phase A of every round all children have passed, in round order.
void node_engine::advance(std::vector<node_output>& out) {
  const uint64_t horizon =
      passed_.empty() ? UINT64_MAX : *std::min_element(passed_.begin(), passed_.end());
  for (auto it = rounds_.begin(); it != rounds_.end() && it->first < horizon;) {
    round_state& r = it->second;
    const uint64_t round = it->first;
    if (!r.a_done) {
      r.a_done = true;
      std::string merged = filter_.merge(r.a_parts);
      r.a_parts.clear();
      if (!root_) {
        node_output o;
        o.to = node_output::target::parent;
        o.p = packet{packet_kind::up_a, round, r.ranks, std::move(merged)};
        out.push_back(std::move(o));
      } else if (filter_.three_phase()) {
        r.root_a = std::move(merged);
        apply_bounds(round, r, filter_.bounds(r.root_a), out);
      } else {
        r.root_a = std::move(merged);
        emit(round, r, nullptr, out);
      }
    }
    const bool finished = !filter_.three_phase() || (r.bounds_in && r.c_expected == SIZE_MAX);
    if (finished)
      it = rounds_.erase(it);
    else
      ++it;
  }
  // Done once every child said fin: a child's final round alone does not end it (its fin, sent
  // after it, must still be received).
  const bool all_finished =
      std::all_of(finished_.begin(), finished_.end(), [](bool f) { return f; });
  if (!done_ && all_finished && rounds_.empty()) {
    done_ = true;
    if (!root_) {
      node_output o;
      o.to = node_output::target::parent;
      o.p = packet{packet_kind::fin, 0, 0, {}};
      out.push_back(std::move(o));
    }
  }
}

void node_engine::apply_bounds(uint64_t round, round_state& r, const std::string& bounds,
                               std::vector<node_output>& out) {
  if (r.bounds_in)
    return;
  r.bounds_in = true;
  if (leaf_children_) {
    // The bottom level bins the profiles it kept (phase C starts here).
    std::vector<std::string> parts;
    parts.reserve(r.kept.size());
    for (const rank_profile& p : r.kept)
      parts.push_back(filter_.bin(p, bounds));
    r.kept.clear();
    r.c_parts.push_back(filter_.merge_binned(parts));
    r.c_expected = 1;
    finish_c(round, r, out);
    return;
  }
  for (int child : r.participants) {
    node_output o;
    o.to = node_output::target::child;
    o.child = child;
    o.p = packet{packet_kind::bounds, round, 0, bounds};
    out.push_back(std::move(o));
  }
  r.c_expected = r.participants.size();
  if (r.c_parts.size() == r.c_expected)
    finish_c(round, r, out);
}

void node_engine::finish_c(uint64_t round, round_state& r, std::vector<node_output>& out) {
  std::string merged =
      r.c_parts.size() == 1 ? std::move(r.c_parts.front()) : filter_.merge_binned(r.c_parts);
  r.c_parts.clear();
  r.c_expected = SIZE_MAX; // phase C done: advance() may drop the round
  if (root_) {
    emit(round, r, &merged, out);
  } else {
    node_output o;
    o.to = node_output::target::parent;
    o.p = packet{packet_kind::up_c, round, r.ranks, std::move(merged)};
    out.push_back(std::move(o));
  }
}

void node_engine::emit(uint64_t round, const round_state& r, const std::string* root_c,
                       std::vector<node_output>& out) {
  node_output o;
  o.to = node_output::target::front;
  o.result.round = round;
  o.result.ranks = r.ranks;
  o.result.root_bytes = r.bytes;
  o.result.json = filter_.render(r.root_a, root_c);
  out.push_back(std::move(o));
}

} // namespace strata::overlay
