// Definitions unified over the ranks at finalize (no MPI here: the module moves the bytes). Each
// rank describes what its records refer to by local indices; these are merged pairwise up a
// binomial tree of the ranks (merged_defs, merge_into), so rank 0 ends with one set of global
// definitions, and each rank's map (local index -> global id) is composed on the way down.
// Entries keep the order of their first appearance in rank order, so the tree's result is the
// same as merging every rank's definitions one after the other (unify).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace strata::trace {

struct source_site {
  std::string file;
  uint32_t line = 0;
  bool operator==(const source_site&) const = default;
};

struct local_defs {
  std::string host;
  std::vector<std::string> mpi_regions;  // MPI functions, by local index
  std::vector<std::string> user_regions; // annotation names, by local index
  std::vector<source_site> sites;        // resolved call sites, by local index
  std::vector<std::vector<int>> comms;   // world ranks of each communicator, by local index
};

std::string serialize(const local_defs& defs);
// False when `bytes` is not what serialize wrote.
bool deserialize(const std::string& bytes, local_defs& defs);

struct global_defs {
  std::vector<std::string> hosts;
  std::vector<uint32_t> rank_host; // host index of each rank
  // Region ids: MPI functions first (0..mpi_regions-1), then user regions.
  std::vector<std::string> mpi_regions;
  std::vector<std::string> user_regions;
  std::vector<source_site> sites;
  std::vector<std::vector<int>> comms;
};

struct rank_map {
  std::vector<uint32_t> mpi_region;
  std::vector<uint32_t> user_region;
  std::vector<uint32_t> site;
  std::vector<uint32_t> comm;
};

// Communicators are the same when the ranks' member lists are equal and they are the k-th such
// list on each rank (a duplicate of MPI_COMM_WORLD is not the world).
void unify(const std::vector<local_defs>& ranks, global_defs& global, std::vector<rank_map>& maps);

// The definitions of a contiguous range of ranks, unified. A rank's own (from_local) are its
// local definitions in their local order, so its local index is its index here.
struct merged_defs {
  std::vector<std::string> hosts;
  std::vector<uint32_t> rank_host; // host index of each rank of the range, in rank order
  std::vector<std::string> mpi_regions;
  std::vector<std::string> user_regions;
  std::vector<source_site> sites;
  // Members (world ranks) and occurrence: the k-th communicator with these members on a rank.
  std::vector<std::pair<std::vector<int>, uint32_t>> comms;
};
merged_defs from_local(const local_defs& defs);

// Appends the definitions of the ranks right after `into`'s range; `into`'s entries keep their
// indices. Returns where each entry of `next` now is (user regions as indices into
// into.user_regions, not yet after the MPI regions).
rank_map merge_into(merged_defs& into, const merged_defs& next);

std::string serialize(const merged_defs& defs);
// False when `bytes` is not what serialize wrote for a job of `world_size` ranks.
bool deserialize(const std::string& bytes, merged_defs& defs, int world_size);

// The job's definitions from the set of every rank, and the map of that set's own indices to
// global ids (user regions after the MPI regions).
global_defs to_global(const merged_defs& all);
rank_map global_ids(const merged_defs& all);
// outer[inner[i]] for each part: a map into a set composed with that set's own map. False when
// an index of `inner` is outside `outer`.
bool compose(const rank_map& inner, const rank_map& outer, rank_map& out);
// The first `sizes` entries of each part (a rank's own entries at the front of its set).
rank_map prefix(const rank_map& map, const local_defs& sizes);

// The binomial tree of the ranks that finalize reduces over: rank r's parent is r minus its
// lowest set bit (none for rank 0), its children r + 2^k for each 2^k below that bit (and below
// `size`), in increasing k. ceil(log2(size)) rounds.
struct tree_links {
  int parent = -1;
  std::vector<int> children;
};
tree_links binomial_links(int rank, int size);

// One flat array per rank map, for MPI_Scatterv, and back.
std::vector<uint32_t> flatten(const rank_map& map);
bool unflatten(const std::vector<uint32_t>& flat, rank_map& map);

} // namespace strata::trace
