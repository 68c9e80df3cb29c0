// Definitions unified over the ranks at finalize (no MPI here: the module moves the bytes). Each
// rank describes what its records refer to by local indices; rank 0 merges them into one set of
// global definitions and one map per rank (local index -> global id).
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

// One flat array per rank map, for MPI_Scatterv, and back.
std::vector<uint32_t> flatten(const rank_map& map);
bool unflatten(const std::vector<uint32_t>& flat, rank_map& map);

} // namespace strata::trace
