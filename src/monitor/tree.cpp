#include "monitor/tree.hpp"

#include <algorithm>

namespace strata::overlay {

tree_layout make_tree(int leaves, int fanout) {
  tree_layout t;
  t.leaves = std::max(leaves, 1);
  t.fanout = std::max(fanout, 2);
  std::vector<int> bottom_up;
  int n = t.leaves;
  do {
    n = (n + t.fanout - 1) / t.fanout;
    bottom_up.push_back(n);
  } while (n > 1);
  t.level_sizes.assign(bottom_up.rbegin(), bottom_up.rend());
  int start = 0;
  for (int size : t.level_sizes) {
    t.level_start.push_back(start);
    start += size;
  }
  return t;
}

int tree_layout::tool_count() const {
  int total = 0;
  for (int s : level_sizes)
    total += s;
  return total;
}

int tree_layout::level_of(int node) const {
  for (int l = depth() - 1; l >= 0; --l)
    if (node >= level_start[static_cast<size_t>(l)])
      return l;
  return 0;
}

int tree_layout::parent_of_leaf(int leaf) const {
  return level_start.back() + leaf / fanout;
}

int tree_layout::parent_of_node(int node) const {
  const int level = level_of(node);
  if (level == 0)
    return -1;
  const int index = node - level_start[static_cast<size_t>(level)];
  return level_start[static_cast<size_t>(level - 1)] + index / fanout;
}

std::vector<int> tree_layout::children(int node) const {
  const int level = level_of(node);
  const int index = node - level_start[static_cast<size_t>(level)];
  std::vector<int> out;
  if (level == depth() - 1) {
    for (int c = index * fanout; c < std::min((index + 1) * fanout, leaves); ++c)
      out.push_back(c);
    return out;
  }
  const int below = level_sizes[static_cast<size_t>(level) + 1];
  const int base = level_start[static_cast<size_t>(level) + 1];
  for (int c = index * fanout; c < std::min((index + 1) * fanout, below); ++c)
    out.push_back(base + c);
  return out;
}

int tool_ranks_for(int leaves, int fanout) {
  return make_tree(leaves, fanout).tool_count();
}

int leaves_for_world(int world, int fanout) {
  for (int p = world - 1; p >= 1; --p)
    if (p + tool_ranks_for(p, fanout) == world)
      return p;
  return -1;
}

} // namespace strata::overlay
