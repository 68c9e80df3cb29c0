// The event graph held in memory, for traces small enough to keep whole: vertices are
// operations, edges are nesting (parent), partner (send -> receive) and collective (members of one
// instance). Offers the two traversals of the HieraAnalyses paper. The streaming analysis does not
// need it; it is built by passing an event_graph as the observer of analyze_trace.
#pragma once

#include "analyzer/analysis.hpp"

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

namespace strata::analyze {

class event_graph final : public graph_observer {
public:
  void on_operation(const operation& op) override;
  void on_partner(const partner_edge& edge) override;
  void on_collective(const std::vector<uint64_t>& ops) override;

  [[nodiscard]] size_t size() const { return vertices_.size(); }
  [[nodiscard]] const operation& vertex(uint64_t id) const;
  // Partners of an operation: the other end of each of its messages, the other members of its
  // collective instance.
  [[nodiscard]] std::vector<uint64_t> partners(uint64_t id) const;
  [[nodiscard]] std::vector<uint64_t> children(uint64_t id) const;

  // The paper's Figure 3: every operation once, process after process, each in enter order.
  void traverse_by_operation(const std::function<void(const operation&)>& visit) const;
  // The paper's Figure 4: each operation followed by its partner operations before the next
  // operation of the same process; an operation is visited again each time it is someone's partner.
  void traverse_by_partner(const std::function<void(const operation&)>& visit) const;

private:
  void sort() const;
  mutable std::vector<operation> vertices_;
  mutable bool sorted_ = true;
  mutable std::unordered_map<uint64_t, size_t> index_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> partners_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> children_;
};

} // namespace strata::analyze
