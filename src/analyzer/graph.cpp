#include "analyzer/graph.hpp"

#include <algorithm>
#include <stdexcept>

namespace strata::analyze {

void event_graph::on_operation(const operation& op) {
  vertices_.push_back(op);
  sorted_ = false;
  if (op.parent != no_parent)
    children_[op.parent].push_back(op.id);
}

void event_graph::on_partner(const partner_edge& edge) {
  partners_[edge.send_op].push_back(edge.receive_op);
  partners_[edge.receive_op].push_back(edge.send_op);
}

void event_graph::on_collective(const std::vector<uint64_t>& ops) {
  for (uint64_t a : ops)
    for (uint64_t b : ops)
      if (a != b)
        partners_[a].push_back(b);
}

void event_graph::sort() const {
  if (sorted_)
    return;
  // Ids are (rank << 40) | enter order, so id order is process by process, in enter order.
  std::sort(vertices_.begin(), vertices_.end(),
            [](const operation& a, const operation& b) { return a.id < b.id; });
  index_.clear();
  for (size_t i = 0; i < vertices_.size(); ++i)
    index_[vertices_[i].id] = i;
  sorted_ = true;
}

const operation& event_graph::vertex(uint64_t id) const {
  sort();
  auto it = index_.find(id);
  if (it == index_.end())
    throw std::out_of_range("no operation " + std::to_string(id) + " in the graph");
  return vertices_[it->second];
}

std::vector<uint64_t> event_graph::partners(uint64_t id) const {
  auto it = partners_.find(id);
  return it == partners_.end() ? std::vector<uint64_t>{} : it->second;
}

std::vector<uint64_t> event_graph::children(uint64_t id) const {
  auto it = children_.find(id);
  if (it == children_.end())
    return {};
  std::vector<uint64_t> c = it->second;
  std::sort(c.begin(), c.end());
  return c;
}

void event_graph::traverse_by_operation(const std::function<void(const operation&)>& visit) const {
  sort();
  for (const operation& op : vertices_)
    visit(op);
}

void event_graph::traverse_by_partner(const std::function<void(const operation&)>& visit) const {
  sort();
  for (const operation& op : vertices_) {
    visit(op);
    for (uint64_t p : partners(op.id))
      visit(vertex(p));
  }
}

} // namespace strata::analyze
