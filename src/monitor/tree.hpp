// The overlay's shape: P application ranks (leaves) under a K-ary tree of M tool nodes. Tool
// node 0 is the root (the front end); nodes are numbered level by level from the top, and the
// nodes of the bottom level each take up to K consecutive application ranks.
#pragma once

#include <string>
#include <vector>

namespace strata::overlay {

struct tree_layout {
  int leaves = 0;
  int fanout = 0;
  std::vector<int> level_sizes; // from the root (1) down to the level above the leaves
  std::vector<int> level_start; // first node index of each level

  int tool_count() const;
  int depth() const { return static_cast<int>(level_sizes.size()); }
  int level_of(int node) const;
  int parent_of_leaf(int leaf) const;
  int parent_of_node(int node) const; // -1 for the root
  bool children_are_leaves(int node) const { return level_of(node) == depth() - 1; }
  // Children: leaf indices when children_are_leaves(node), else node indices.
  std::vector<int> children(int node) const;
};

// The layout for `leaves` ranks and fanout `fanout` (>= 2, leaves >= 1).
tree_layout make_tree(int leaves, int fanout);
// M: the tool ranks a K-ary tree over P leaves needs.
int tool_ranks_for(int leaves, int fanout);
// The P such that P + M(P, K) == world, or -1 when no P fits exactly.
int leaves_for_world(int world, int fanout);

} // namespace strata::overlay
