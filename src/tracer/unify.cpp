#include "tracer/unify.hpp"

#include <algorithm>
#include <map>
#include <string_view>

namespace strata::trace {

namespace {

void put(std::string& out, std::string_view field) {
  out.append(std::to_string(field.size()));
  out.push_back(':');
  out.append(field);
}

void put_number(std::string& out, uint64_t n) {
  put(out, std::to_string(n));
}

// Member lists as runs of consecutive ranks (first, length): a world-sized communicator is one
// run, whatever the number of ranks.
void put_members(std::string& out, const std::vector<int>& members) {
  std::vector<std::pair<int, uint64_t>> runs;
  for (const int r : members) {
    if (!runs.empty() && runs.back().first + static_cast<int64_t>(runs.back().second) == r)
      ++runs.back().second;
    else
      runs.emplace_back(r, 1);
  }
  put_number(out, runs.size());
  for (const auto& [first, length] : runs) {
    put_number(out, static_cast<uint64_t>(first));
    put_number(out, length);
  }
}

struct reader {
  std::string_view rest;
  bool ok = true;

  std::string field() {
    const size_t colon = rest.find(':');
    // Canonical lengths only (no leading zeros): what serialize writes, and nothing else.
    if (!ok || colon == std::string_view::npos || colon == 0 || colon > 10 ||
        (colon > 1 && rest[0] == '0')) {
      ok = false;
      return {};
    }
    uint64_t n = 0;
    for (size_t i = 0; i < colon; ++i) {
      if (rest[i] < '0' || rest[i] > '9') {
        ok = false;
        return {};
      }
      n = n * 10 + static_cast<uint64_t>(rest[i] - '0');
    }
    if (n > rest.size() - colon - 1) {
      ok = false;
      return {};
    }
    std::string out(rest.substr(colon + 1, n));
    rest.remove_prefix(colon + 1 + n);
    return out;
  }

  uint64_t number(uint64_t max) {
    const std::string text = field();
    if (!ok || text.empty() || text.size() > 19 || (text.size() > 1 && text[0] == '0')) {
      ok = false;
      return 0;
    }
    uint64_t n = 0;
    for (const char c : text) {
      if (c < '0' || c > '9') {
        ok = false;
        return 0;
      }
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    if (n > max)
      ok = false;
    return n;
  }

  // What put_members wrote: ranks up to `max_rank`, runs that do not continue the one before.
  std::vector<int> members(uint64_t limit, uint64_t max_rank) {
    std::vector<int> out;
    for (uint64_t runs = number(limit); ok && runs > 0; --runs) {
      const uint64_t first = number(max_rank);
      const uint64_t length = number(max_rank + 1);
      if (!ok || length == 0 || first + length - 1 > max_rank ||
          (!out.empty() && static_cast<uint64_t>(out.back()) + 1 == first)) {
        ok = false;
        break;
      }
      for (uint64_t i = 0; i < length; ++i)
        out.push_back(static_cast<int>(first + i));
    }
    return out;
  }
};

// The regions and call sites, as both kinds of definitions carry them.
template <typename Defs> void put_regions_and_sites(std::string& out, const Defs& defs) {
  put_number(out, defs.mpi_regions.size());
  for (const std::string& r : defs.mpi_regions)
    put(out, r);
  put_number(out, defs.user_regions.size());
  for (const std::string& r : defs.user_regions)
    put(out, r);
  put_number(out, defs.sites.size());
  for (const source_site& s : defs.sites) {
    put(out, s.file);
    put_number(out, s.line);
  }
}

template <typename Defs> void read_regions_and_sites(reader& in, uint64_t limit, Defs& defs) {
  for (uint64_t n = in.number(limit); in.ok && n > 0; --n)
    defs.mpi_regions.push_back(in.field());
  for (uint64_t n = in.number(limit); in.ok && n > 0; --n)
    defs.user_regions.push_back(in.field());
  for (uint64_t n = in.number(limit); in.ok && n > 0; --n) {
    source_site s;
    s.file = in.field();
    s.line = static_cast<uint32_t>(in.number(UINT32_MAX));
    defs.sites.push_back(s);
  }
}

template <typename Key>
uint32_t intern(std::map<Key, uint32_t>& index, const Key& key, std::vector<Key>& list) {
  auto [it, added] = index.emplace(key, static_cast<uint32_t>(list.size()));
  if (added)
    list.push_back(key);
  return it->second;
}

} // namespace

std::string serialize(const local_defs& defs) {
  std::string out = "strata-trace-defs/1;";
  put(out, defs.host);
  put_regions_and_sites(out, defs);
  put_number(out, defs.comms.size());
  for (const std::vector<int>& members : defs.comms) {
    put_number(out, members.size());
    for (const int r : members)
      put_number(out, static_cast<uint64_t>(r));
  }
  return out;
}

bool deserialize(const std::string& bytes, local_defs& defs) {
  static constexpr std::string_view magic = "strata-trace-defs/1;";
  if (bytes.compare(0, magic.size(), magic) != 0)
    return false;
  reader in{std::string_view(bytes).substr(magic.size())};
  defs = local_defs{};
  const uint64_t limit = bytes.size(); // no list can have more entries than there are bytes
  defs.host = in.field();
  read_regions_and_sites(in, limit, defs);
  for (uint64_t n = in.number(limit); in.ok && n > 0; --n) {
    std::vector<int> members;
    for (uint64_t m = in.number(limit); in.ok && m > 0; --m)
      members.push_back(static_cast<int>(in.number(INT32_MAX)));
    defs.comms.push_back(std::move(members));
  }
  return in.ok && in.rest.empty();
}

std::string serialize(const merged_defs& defs) {
  std::string out = "strata-trace-merged/1;";
  put_number(out, defs.hosts.size());
  for (const std::string& h : defs.hosts)
    put(out, h);
  put_number(out, defs.rank_host.size());
  for (const uint32_t h : defs.rank_host)
    put_number(out, h);
  put_regions_and_sites(out, defs);
  put_number(out, defs.comms.size());
  for (const auto& [members, k] : defs.comms) {
    put_members(out, members);
    put_number(out, k);
  }
  return out;
}

bool deserialize(const std::string& bytes, merged_defs& defs, int world_size) {
  static constexpr std::string_view magic = "strata-trace-merged/1;";
  if (bytes.compare(0, magic.size(), magic) != 0)
    return false;
  reader in{std::string_view(bytes).substr(magic.size())};
  defs = merged_defs{};
  const uint64_t limit = bytes.size();
  for (uint64_t n = in.number(limit); in.ok && n > 0; --n)
    defs.hosts.push_back(in.field());
  for (uint64_t n = in.number(limit); in.ok && n > 0; --n)
    defs.rank_host.push_back(static_cast<uint32_t>(in.number(defs.hosts.size() - 1)));
  read_regions_and_sites(in, limit, defs);
  for (uint64_t n = in.number(limit); in.ok && n > 0; --n) {
    std::vector<int> members =
        in.members(limit, static_cast<uint64_t>(std::max(world_size, 1) - 1));
    const auto k = static_cast<uint32_t>(in.number(UINT32_MAX));
    defs.comms.emplace_back(std::move(members), k);
  }
  return in.ok && in.rest.empty();
}

namespace {

// A set of definitions with an index of its entries, for appending others to it.
class indexed_defs {
public:
  explicit indexed_defs(merged_defs& d) : d_(d) {
    for (uint32_t i = 0; i < d.hosts.size(); ++i)
      hosts_.emplace(d.hosts[i], i);
    for (uint32_t i = 0; i < d.mpi_regions.size(); ++i)
      mpi_regions_.emplace(d.mpi_regions[i], i);
    for (uint32_t i = 0; i < d.user_regions.size(); ++i)
      user_regions_.emplace(d.user_regions[i], i);
    for (uint32_t i = 0; i < d.sites.size(); ++i)
      sites_.emplace(std::make_pair(d.sites[i].file, d.sites[i].line), i);
    for (uint32_t i = 0; i < d.comms.size(); ++i)
      comms_.emplace(d.comms[i], i);
  }

  rank_map append(const merged_defs& next) {
    rank_map m;
    std::vector<uint32_t> host;
    for (const std::string& h : next.hosts)
      host.push_back(intern(hosts_, h, d_.hosts));
    for (const uint32_t h : next.rank_host)
      d_.rank_host.push_back(h < host.size() ? host[h] : 0);
    for (const std::string& name : next.mpi_regions)
      m.mpi_region.push_back(intern(mpi_regions_, name, d_.mpi_regions));
    for (const std::string& name : next.user_regions)
      m.user_region.push_back(intern(user_regions_, name, d_.user_regions));
    for (const source_site& site : next.sites) {
      auto [it, added] = sites_.emplace(std::make_pair(site.file, site.line),
                                        static_cast<uint32_t>(d_.sites.size()));
      if (added)
        d_.sites.push_back(site);
      m.site.push_back(it->second);
    }
    for (const auto& comm : next.comms)
      m.comm.push_back(intern(comms_, comm, d_.comms));
    return m;
  }

private:
  merged_defs& d_;
  std::map<std::string, uint32_t> hosts_;
  std::map<std::string, uint32_t> mpi_regions_;
  std::map<std::string, uint32_t> user_regions_;
  std::map<std::pair<std::string, uint32_t>, uint32_t> sites_;
  std::map<std::pair<std::vector<int>, uint32_t>, uint32_t> comms_;
};

std::vector<uint32_t> identity(size_t n, uint32_t offset = 0) {
  std::vector<uint32_t> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = static_cast<uint32_t>(i) + offset;
  return out;
}

} // namespace

merged_defs from_local(const local_defs& defs) {
  merged_defs m;
  m.hosts = {defs.host};
  m.rank_host = {0};
  m.mpi_regions = defs.mpi_regions;
  m.user_regions = defs.user_regions;
  m.sites = defs.sites;
  std::map<std::vector<int>, uint32_t> seen; // occurrences of each member list on this rank
  for (const std::vector<int>& members : defs.comms)
    m.comms.emplace_back(members, seen[members]++);
  return m;
}

rank_map merge_into(merged_defs& into, const merged_defs& next) {
  return indexed_defs(into).append(next);
}

void unify(const std::vector<local_defs>& ranks, global_defs& global, std::vector<rank_map>& maps) {
  global = global_defs{};
  maps.assign(ranks.size(), rank_map{});
  if (ranks.empty())
    return;
  merged_defs all = from_local(ranks[0]);
  indexed_defs index(all);
  std::vector<rank_map> local(ranks.size());
  local[0] = {identity(all.mpi_regions.size()), identity(all.user_regions.size()),
              identity(all.sites.size()), identity(all.comms.size())};
  for (size_t r = 1; r < ranks.size(); ++r)
    local[r] = index.append(from_local(ranks[r]));
  global = to_global(all);
  const rank_map ids = global_ids(all);
  for (size_t r = 0; r < ranks.size(); ++r)
    compose(local[r], ids, maps[r]);
}

global_defs to_global(const merged_defs& all) {
  global_defs g;
  g.hosts = all.hosts;
  g.rank_host = all.rank_host;
  g.mpi_regions = all.mpi_regions;
  g.user_regions = all.user_regions;
  g.sites = all.sites;
  for (const auto& [members, k] : all.comms)
    g.comms.push_back(members);
  return g;
}

rank_map global_ids(const merged_defs& all) {
  return {identity(all.mpi_regions.size()),
          identity(all.user_regions.size(), static_cast<uint32_t>(all.mpi_regions.size())),
          identity(all.sites.size()), identity(all.comms.size())};
}

bool compose(const rank_map& inner, const rank_map& outer, rank_map& out) {
  bool ok = true;
  auto part = [&ok](const std::vector<uint32_t>& in, const std::vector<uint32_t>& to,
                    std::vector<uint32_t>& result) {
    result.clear();
    result.reserve(in.size());
    for (const uint32_t i : in) {
      ok = ok && i < to.size();
      result.push_back(i < to.size() ? to[i] : 0);
    }
  };
  part(inner.mpi_region, outer.mpi_region, out.mpi_region);
  part(inner.user_region, outer.user_region, out.user_region);
  part(inner.site, outer.site, out.site);
  part(inner.comm, outer.comm, out.comm);
  return ok;
}

rank_map prefix(const rank_map& map, const local_defs& sizes) {
  auto first = [](const std::vector<uint32_t>& v, size_t n) {
    return std::vector<uint32_t>(v.begin(),
                                 v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size())));
  };
  return {first(map.mpi_region, sizes.mpi_regions.size()),
          first(map.user_region, sizes.user_regions.size()), first(map.site, sizes.sites.size()),
          first(map.comm, sizes.comms.size())};
}

tree_links binomial_links(int rank, int size) {
  tree_links links;
  int step = 1;
  for (; step < size; step <<= 1) {
    if ((rank & step) != 0) {
      links.parent = rank - step;
      break;
    }
    if (rank + step < size)
      links.children.push_back(rank + step);
  }
  return links;
}

std::vector<uint32_t> flatten(const rank_map& map) {
  std::vector<uint32_t> out;
  for (const auto* part : {&map.mpi_region, &map.user_region, &map.site, &map.comm}) {
    out.push_back(static_cast<uint32_t>(part->size()));
    out.insert(out.end(), part->begin(), part->end());
  }
  return out;
}

bool unflatten(const std::vector<uint32_t>& flat, rank_map& map) {
  size_t at = 0;
  for (auto* part : {&map.mpi_region, &map.user_region, &map.site, &map.comm}) {
    if (at >= flat.size() || flat[at] > flat.size() - at - 1)
      return false;
    const size_t n = flat[at++];
    part->assign(flat.begin() + static_cast<std::ptrdiff_t>(at),
                 flat.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
  }
  return at == flat.size();
}

} // namespace strata::trace
