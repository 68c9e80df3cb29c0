#include "tracer/unify.hpp"

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
};

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
  for (uint64_t n = in.number(limit); in.ok && n > 0; --n) {
    std::vector<int> members;
    for (uint64_t m = in.number(limit); in.ok && m > 0; --m)
      members.push_back(static_cast<int>(in.number(INT32_MAX)));
    defs.comms.push_back(std::move(members));
  }
  return in.ok && in.rest.empty();
}

void unify(const std::vector<local_defs>& ranks, global_defs& global, std::vector<rank_map>& maps) {
  global = global_defs{};
  maps.assign(ranks.size(), rank_map{});
  std::map<std::string, uint32_t> hosts;
  std::map<std::string, uint32_t> mpi_regions;
  std::map<std::string, uint32_t> user_regions;
  std::map<std::pair<std::string, uint32_t>, uint32_t> sites;
  std::map<std::pair<std::vector<int>, uint32_t>, uint32_t> comms;
  std::vector<std::pair<std::string, uint32_t>> site_list;
  std::vector<std::pair<std::vector<int>, uint32_t>> comm_list;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const local_defs& d = ranks[r];
    rank_map& m = maps[r];
    global.rank_host.push_back(intern(hosts, d.host, global.hosts));
    for (const std::string& name : d.mpi_regions)
      m.mpi_region.push_back(intern(mpi_regions, name, global.mpi_regions));
    for (const std::string& name : d.user_regions)
      m.user_region.push_back(intern(user_regions, name, global.user_regions));
    for (const source_site& s : d.sites)
      m.site.push_back(intern(sites, std::make_pair(s.file, s.line), site_list));
    std::map<std::vector<int>, uint32_t> seen; // occurrences of each member list on this rank
    for (const std::vector<int>& members : d.comms) {
      const uint32_t k = seen[members]++;
      m.comm.push_back(intern(comms, std::make_pair(members, k), comm_list));
    }
  }
  const auto region_count = static_cast<uint32_t>(global.mpi_regions.size());
  for (rank_map& m : maps)
    for (uint32_t& id : m.user_region)
      id += region_count;
  for (auto& [file, line] : site_list)
    global.sites.push_back({file, line});
  for (auto& [members, k] : comm_list)
    global.comms.push_back(members);
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
