// The trace module at finalize: the clock offset measured again, each rank's definitions (MPI
// functions used, region names, call sites, communicators) unified on rank 0 and mapped back,
// then every rank writes its own event file through OTF2's MPI collectives, timestamps on rank
// 0's clock, and rank 0 writes the global definitions.
#include "tracer/module/state.hpp"

#include <otf2/OTF2_MPI_Collectives.h>
#include <otf2/otf2.h>

#include "profile/symbols.hpp"
#include "tracer/unify.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <unistd.h>

namespace strata::trace {
namespace {

OTF2_FlushType pre_flush(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) {
  return OTF2_FLUSH;
}
OTF2_TimeStamp post_flush(void*, OTF2_FileType, OTF2_LocationRef) {
  return 0;
}
OTF2_FlushCallbacks flush_callbacks = {pre_flush, post_flush};

// Bytes moved between ranks with MPI, as a vector of strings (rank 0 gets all, others none).
std::vector<std::string> gather_strings(const std::string& mine, int rank, int size) {
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<size_t>(size));
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> displs(static_cast<size_t>(size), 0);
  size_t total = 0;
  for (int r = 0; r < size; ++r) {
    displs[static_cast<size_t>(r)] = static_cast<int>(total);
    total += static_cast<size_t>(lengths[static_cast<size_t>(r)]);
  }
  std::string all(rank == 0 ? total : 0, '\0');
  MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), displs.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rank == 0)
    for (int r = 0; r < size; ++r)
      out.push_back(all.substr(static_cast<size_t>(displs[static_cast<size_t>(r)]),
                               static_cast<size_t>(lengths[static_cast<size_t>(r)])));
  return out;
}

std::vector<uint32_t> scatter_maps(const std::vector<std::vector<uint32_t>>& flat, int rank,
                                   int size) {
  std::vector<int> lengths(static_cast<size_t>(size), 0);
  std::vector<int> displs(static_cast<size_t>(size), 0);
  std::vector<uint32_t> all;
  if (rank == 0)
    for (int r = 0; r < size; ++r) {
      lengths[static_cast<size_t>(r)] = static_cast<int>(flat[static_cast<size_t>(r)].size());
      displs[static_cast<size_t>(r)] = static_cast<int>(all.size());
      all.insert(all.end(), flat[static_cast<size_t>(r)].begin(),
                 flat[static_cast<size_t>(r)].end());
    }
  int mine = 0;
  MPI_Scatter(lengths.data(), 1, MPI_INT, &mine, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<uint32_t> out(static_cast<size_t>(mine));
  MPI_Scatterv(all.data(), lengths.data(), displs.data(), MPI_UINT32_T, out.data(), mine,
               MPI_UINT32_T, 0, MPI_COMM_WORLD);
  return out;
}

// What this rank's records refer to, by local index, and the raw -> local index maps.
struct local_index {
  local_defs defs;
  std::vector<int32_t> mpi_region_of_fid;                // -1 = unused
  std::unordered_map<uint64_t, int32_t> site_of_address; // -1 = unknown place
};

local_index collect_local(trace_state* s) {
  local_index li;
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  li.defs.host = host;
  li.mpi_region_of_fid.assign(s->functions.size(), -1);
  std::vector<uint64_t> addresses;
  s->buffer->for_each([&](const record& r) {
    if (r.kind() == record_kind::mpi_call && li.mpi_region_of_fid[r.index()] < 0) {
      li.mpi_region_of_fid[r.index()] = static_cast<int32_t>(li.defs.mpi_regions.size());
      li.defs.mpi_regions.emplace_back(s->host->function_name(static_cast<int>(r.index())));
    }
    if (r.call_site != 0 && li.site_of_address.emplace(r.call_site, -1).second)
      addresses.push_back(r.call_site);
  });
  li.defs.user_regions = s->region_names;
  const std::vector<profile::source_location> places =
      profile::resolve_return_addresses(addresses, "strata/annotate.h");
  std::map<std::pair<std::string, int>, int32_t> site_index;
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (places[i].line <= 0)
      continue; // no line information: the Enter goes without a call site
    auto [it, added] = site_index.emplace(std::make_pair(places[i].file, places[i].line),
                                          static_cast<int32_t>(li.defs.sites.size()));
    if (added)
      li.defs.sites.push_back({places[i].file, static_cast<uint32_t>(places[i].line)});
    li.site_of_address[addresses[i]] = it->second;
  }
  li.defs.comms.assign(s->comm_members.begin() + 1, s->comm_members.end());
  return li;
}

// Writes this rank's records as OTF2 events with global ids. Returns the number of events.
struct event_writer {
  trace_state* s;
  OTF2_EvtWriter* w;
  const local_index& li;
  const rank_map& map;
  OTF2_AttributeList* attributes = nullptr;
  uint64_t events = 0;
  std::vector<std::unordered_map<int, uint32_t>> comm_rank_of_world; // by local comm index
  std::vector<uint32_t> open_regions;                                // global ids
  bool pending_leave = false;
  uint64_t pending_time = 0;
  uint32_t pending_region = 0;
  std::vector<bool> request_started; // requests whose Isend/Irecv is in the archive
  uint64_t last_time = 0;

  ~event_writer() { OTF2_AttributeList_Delete(attributes); }

  uint64_t at(uint64_t t) {
    // Corrected, and never before the previous event (the correction is not perfectly monotone
    // across a clock step, and readers expect order).
    last_time = std::max(last_time, s->clock.correct(t));
    return last_time;
  }

  uint32_t comm_rank(uint32_t comm, int world) {
    if (comm == 0 || world < 0)
      return OTF2_UNDEFINED_UINT32;
    if (comm_rank_of_world.empty())
      comm_rank_of_world.resize(s->comm_members.size());
    auto& table = comm_rank_of_world[comm];
    if (table.empty()) {
      const auto& members = s->comm_members[comm];
      for (size_t r = 0; r < members.size(); ++r)
        table.emplace(members[r], static_cast<uint32_t>(r));
    }
    auto it = table.find(world);
    return it == table.end() ? OTF2_UNDEFINED_UINT32 : it->second;
  }

  OTF2_CommRef global_comm(uint32_t comm) const {
    return comm == 0 || comm > map.comm.size() ? OTF2_UNDEFINED_COMM : map.comm[comm - 1];
  }

  void call_site(uint64_t address) {
    if (address == 0)
      return;
    auto it = li.site_of_address.find(address);
    if (it != li.site_of_address.end() && it->second >= 0)
      OTF2_AttributeList_AddSourceCodeLocationRef(attributes, 0,
                                                  map.site[static_cast<size_t>(it->second)]);
  }

  void flush_leave() {
    if (pending_leave) {
      OTF2_EvtWriter_Leave(w, nullptr, at(pending_time), pending_region);
      ++events;
      pending_leave = false;
    }
  }

  bool started(uint32_t request) const {
    return request < request_started.size() && request_started[request];
  }
  void start(uint32_t request) {
    if (request >= request_started.size())
      request_started.resize(std::max<size_t>(request + 1, request_started.size() * 2), false);
    request_started[request] = true;
  }

  void write(const record& r) {
    switch (r.kind()) {
    case record_kind::send_complete:
    case record_kind::recv_complete:
      if (!pending_leave || !started(r.request))
        return; // its call or its start fell out of a ring buffer
      if (r.kind() == record_kind::send_complete) {
        OTF2_EvtWriter_MpiIsendComplete(w, nullptr, at(r.t_enter), r.request);
      } else {
        OTF2_EvtWriter_MpiIrecv(w, nullptr, at(r.t_enter), static_cast<uint32_t>(r.source),
                                global_comm(r.comm), static_cast<uint32_t>(r.recv_tag),
                                static_cast<uint64_t>(std::max<int64_t>(r.bytes_received, 0)),
                                r.request);
      }
      ++events;
      return;
    case record_kind::region_enter: {
      flush_leave();
      const uint32_t region = map.user_region[r.index()];
      call_site(r.call_site);
      OTF2_EvtWriter_Enter(w, attributes, at(r.t_enter), region);
      ++events;
      open_regions.push_back(region);
      return;
    }
    case record_kind::region_leave: {
      flush_leave();
      const uint32_t region = map.user_region[r.index()];
      if (open_regions.empty() || open_regions.back() != region)
        return; // its enter fell out of a ring buffer
      open_regions.pop_back();
      OTF2_EvtWriter_Leave(w, nullptr, at(r.t_enter), region);
      ++events;
      return;
    }
    case record_kind::mpi_call:
      break;
    default:
      return;
    }
    flush_leave();
    const fn_info& f = s->functions[r.index()];
    const uint32_t region = map.mpi_region[static_cast<size_t>(li.mpi_region_of_fid[r.index()])];
    const OTF2_CommRef comm = global_comm(r.comm);
    call_site(r.call_site);
    OTF2_EvtWriter_Enter(w, attributes, at(r.t_enter), region);
    ++events;
    const bool has_comm = comm != OTF2_UNDEFINED_COMM;
    const uint32_t peer = comm_rank(r.comm, r.peer);
    const bool sends = has_comm && peer != OTF2_UNDEFINED_UINT32;
    const bool receives = has_comm && r.source >= 0;
    switch (f.cls) {
    case fn_class::send:
      if (sends) {
        OTF2_EvtWriter_MpiSend(w, nullptr, at(r.t_enter), peer, comm, static_cast<uint32_t>(r.tag),
                               static_cast<uint64_t>(r.bytes_sent));
        ++events;
      }
      break;
    case fn_class::isend:
      if (sends && r.request != 0) {
        OTF2_EvtWriter_MpiIsend(w, nullptr, at(r.t_enter), peer, comm, static_cast<uint32_t>(r.tag),
                                static_cast<uint64_t>(r.bytes_sent), r.request);
        start(r.request);
        ++events;
      }
      break;
    case fn_class::irecv: // from MPI_PROC_NULL: no message, so no request records either
      if (has_comm && r.request != 0 && r.peer != STRATA_PROC_NULL_RANK) {
        OTF2_EvtWriter_MpiIrecvRequest(w, nullptr, at(r.t_leave), r.request);
        start(r.request);
        ++events;
      }
      break;
    case fn_class::recv:
      if (receives) {
        OTF2_EvtWriter_MpiRecv(w, nullptr, at(r.t_leave), static_cast<uint32_t>(r.source), comm,
                               static_cast<uint32_t>(r.recv_tag),
                               static_cast<uint64_t>(std::max<int64_t>(r.bytes_received, 0)));
        ++events;
      }
      break;
    case fn_class::sendrecv:
      if (sends) {
        OTF2_EvtWriter_MpiSend(w, nullptr, at(r.t_enter), peer, comm, static_cast<uint32_t>(r.tag),
                               static_cast<uint64_t>(r.bytes_sent));
        ++events;
      }
      if (receives) {
        OTF2_EvtWriter_MpiRecv(w, nullptr, at(r.t_leave), static_cast<uint32_t>(r.source), comm,
                               static_cast<uint32_t>(r.recv_tag),
                               static_cast<uint64_t>(std::max<int64_t>(r.bytes_received, 0)));
        ++events;
      }
      break;
    case fn_class::collective:
      if (has_comm) {
        OTF2_EvtWriter_MpiCollectiveBegin(w, nullptr, at(r.t_enter));
        OTF2_EvtWriter_MpiCollectiveEnd(
            w, nullptr, at(r.t_leave), f.op, comm, comm_rank(r.comm, r.root),
            static_cast<uint64_t>(std::max<int64_t>(r.bytes_sent, 0)),
            static_cast<uint64_t>(std::max<int64_t>(r.bytes_received, 0)));
        events += 2;
      }
      break;
    default:
      break;
    }
    pending_leave = true;
    pending_time = r.t_leave;
    pending_region = region;
  }

  void finish() {
    flush_leave();
    // Regions still open (the program ended inside them, or their leave was not kept) close at
    // the last event, so the archive nests.
    while (!open_regions.empty()) {
      OTF2_EvtWriter_Leave(w, nullptr, last_time, open_regions.back());
      open_regions.pop_back();
      ++events;
    }
  }
};

struct rank_figures {
  uint64_t events = 0;
  uint64_t dropped = 0;
  uint64_t first = 0;
  uint64_t last = 0;
  int64_t offset_init = 0;
  int64_t offset_final = 0;
};
static_assert(sizeof(rank_figures) == 6 * sizeof(uint64_t));

struct string_table {
  std::map<std::string, OTF2_StringRef> index;
  std::vector<std::string> list;
  OTF2_StringRef operator()(const std::string& text) {
    auto [it, added] = index.emplace(text, static_cast<OTF2_StringRef>(list.size()));
    if (added)
      list.push_back(text);
    return it->second;
  }
};

void write_global_defs(OTF2_Archive* archive, const trace_state* s, const global_defs& g,
                       const std::vector<rank_figures>& ranks,
                       const std::vector<fn_info>& mpi_info) {
  OTF2_GlobalDefWriter* w = OTF2_Archive_GetGlobalDefWriter(archive);
  uint64_t first = std::numeric_limits<uint64_t>::max();
  uint64_t last = 0;
  for (const rank_figures& r : ranks)
    if (r.events > 0) {
      first = std::min(first, r.first);
      last = std::max(last, r.last);
    }
  if (first > last)
    first = last = s->clock.correct(s->init_mono);
  const uint64_t realtime = s->init_real - (s->init_mono - first); // rank 0 defines the clock
  OTF2_GlobalDefWriter_WriteClockProperties(w, 1000000000u, first, last - first + 1, realtime);

  // Strings first (everything refers to them), then the definitions that use them.
  string_table str;
  str("");
  const OTF2_StringRef mpi_name = str("MPI");
  const OTF2_StringRef user_name = str("user");
  const OTF2_StringRef site_name = str("strata:call_site");
  const OTF2_StringRef site_doc = str("where the program entered the region (file, line)");
  std::vector<OTF2_StringRef> rank_names;
  for (size_t r = 0; r < ranks.size(); ++r)
    rank_names.push_back(str("rank " + std::to_string(r)));
  const OTF2_StringRef machine = str("machine");
  const OTF2_StringRef node = str("node");
  std::vector<OTF2_StringRef> host_names;
  for (const std::string& h : g.hosts)
    host_names.push_back(str(h));
  std::vector<OTF2_StringRef> region_names;
  for (const std::string& name : g.mpi_regions)
    region_names.push_back(str(name));
  for (const std::string& name : g.user_regions)
    region_names.push_back(str(name));
  std::vector<OTF2_StringRef> site_files;
  for (const source_site& site : g.sites)
    site_files.push_back(str(site.file));
  std::vector<OTF2_StringRef> comm_names;
  for (size_t c = 0; c < g.comms.size(); ++c) {
    bool world = g.comms[c].size() == ranks.size();
    for (size_t r = 0; world && r < g.comms[c].size(); ++r)
      world = g.comms[c][r] == static_cast<int>(r);
    comm_names.push_back(
        str(world ? (c == 0 || comm_names.empty() ? "MPI_COMM_WORLD" : "comm " + std::to_string(c))
                  : "comm " + std::to_string(c)));
  }
  const OTF2_StringRef locations_name = str("MPI locations");
  const OTF2_StringRef dropped_name = str("strata:dropped_events");
  const OTF2_StringRef offset_init_name = str("strata:clock_offset_init_ns");
  const OTF2_StringRef offset_final_name = str("strata:clock_offset_finalize_ns");
  for (size_t i = 0; i < str.list.size(); ++i)
    OTF2_GlobalDefWriter_WriteString(w, static_cast<OTF2_StringRef>(i), str.list[i].c_str());

  OTF2_GlobalDefWriter_WriteParadigm(w, OTF2_PARADIGM_MPI, mpi_name, OTF2_PARADIGM_CLASS_PROCESS);
  OTF2_GlobalDefWriter_WriteParadigm(w, OTF2_PARADIGM_USER, user_name, OTF2_PARADIGM_CLASS_PROCESS);
  OTF2_GlobalDefWriter_WriteAttribute(w, 0, site_name, site_doc, OTF2_TYPE_SOURCE_CODE_LOCATION);
  OTF2_GlobalDefWriter_WriteSystemTreeNode(w, 0, machine, machine, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
  for (size_t h = 0; h < g.hosts.size(); ++h)
    OTF2_GlobalDefWriter_WriteSystemTreeNode(w, static_cast<OTF2_SystemTreeNodeRef>(h + 1),
                                             host_names[h], node, 0);
  for (size_t r = 0; r < ranks.size(); ++r)
    OTF2_GlobalDefWriter_WriteLocationGroup(
        w, static_cast<OTF2_LocationGroupRef>(r), rank_names[r], OTF2_LOCATION_GROUP_TYPE_PROCESS,
        static_cast<OTF2_SystemTreeNodeRef>(g.rank_host[r] + 1), OTF2_UNDEFINED_LOCATION_GROUP);
  for (size_t r = 0; r < ranks.size(); ++r)
    OTF2_GlobalDefWriter_WriteLocation(w, static_cast<OTF2_LocationRef>(r), rank_names[r],
                                       OTF2_LOCATION_TYPE_CPU_THREAD, ranks[r].events,
                                       static_cast<OTF2_LocationGroupRef>(r));
  for (size_t i = 0; i < g.mpi_regions.size(); ++i)
    OTF2_GlobalDefWriter_WriteRegion(
        w, static_cast<OTF2_RegionRef>(i), region_names[i], region_names[i], str.index.at(""),
        role_of(mpi_info[i]), OTF2_PARADIGM_MPI, OTF2_REGION_FLAG_NONE, str.index.at(""), 0, 0);
  for (size_t i = 0; i < g.user_regions.size(); ++i) {
    const size_t id = g.mpi_regions.size() + i;
    OTF2_GlobalDefWriter_WriteRegion(w, static_cast<OTF2_RegionRef>(id), region_names[id],
                                     region_names[id], str.index.at(""), OTF2_REGION_ROLE_FUNCTION,
                                     OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE, str.index.at(""), 0,
                                     0);
  }
  for (size_t i = 0; i < g.sites.size(); ++i)
    OTF2_GlobalDefWriter_WriteSourceCodeLocation(w, static_cast<OTF2_SourceCodeLocationRef>(i),
                                                 site_files[i], g.sites[i].line);
  // Group 0: the MPI locations (world rank r = location r); group c+1: communicator c's members
  // as world ranks, i.e. indices into group 0.
  std::vector<uint64_t> members;
  for (size_t r = 0; r < ranks.size(); ++r)
    members.push_back(r);
  OTF2_GlobalDefWriter_WriteGroup(w, 0, locations_name, OTF2_GROUP_TYPE_COMM_LOCATIONS,
                                  OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                  static_cast<uint32_t>(members.size()), members.data());
  for (size_t c = 0; c < g.comms.size(); ++c) {
    members.assign(g.comms[c].begin(), g.comms[c].end());
    OTF2_GlobalDefWriter_WriteGroup(w, static_cast<OTF2_GroupRef>(c + 1), comm_names[c],
                                    OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, static_cast<uint32_t>(members.size()),
                                    members.data());
    OTF2_GlobalDefWriter_WriteComm(w, static_cast<OTF2_CommRef>(c), comm_names[c],
                                   static_cast<OTF2_GroupRef>(c + 1), OTF2_UNDEFINED_COMM,
                                   OTF2_COMM_FLAG_NONE);
  }
  for (size_t r = 0; r < ranks.size(); ++r) {
    OTF2_AttributeValue v;
    v.uint64 = ranks[r].dropped;
    OTF2_GlobalDefWriter_WriteLocationProperty(w, static_cast<OTF2_LocationRef>(r), dropped_name,
                                               OTF2_TYPE_UINT64, v);
    v.int64 = ranks[r].offset_init;
    OTF2_GlobalDefWriter_WriteLocationProperty(w, static_cast<OTF2_LocationRef>(r),
                                               offset_init_name, OTF2_TYPE_INT64, v);
    v.int64 = ranks[r].offset_final;
    OTF2_GlobalDefWriter_WriteLocationProperty(w, static_cast<OTF2_LocationRef>(r),
                                               offset_final_name, OTF2_TYPE_INT64, v);
  }
}

// Creates the trace directory, or empties an earlier archive out of it (only the files OTF2 writes
// under the name `traces`). Returns why it cannot be used, empty when it can.
std::string prepare_directory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return "cannot create " + dir + ": " + ec.message();
  for (const char* old : {"traces.otf2", "traces.def", "traces"}) {
    fs::remove_all(fs::path(dir) / old, ec);
    if (ec)
      return "cannot replace the earlier trace in " + dir + ": " + ec.message();
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return dir + " is not writable";
  return {};
}

} // namespace

void trace_finalize(void* raw) {
  auto* s = static_cast<trace_state*>(raw);
  s->traced_thread = 0;
  s->clock.t2 = s->host->now_ns();
  s->clock.o2 = measure_offset(s, s->stddev_final);
  MPI_Comm_free(&s->clock_comm);
  const int rank = s->rank;
  const int size = s->world_size;

  // Definitions: local -> rank 0 -> unified -> each rank's map back.
  local_index li = collect_local(s);
  const std::vector<std::string> all = gather_strings(serialize(li.defs), rank, size);
  global_defs g;
  std::vector<std::vector<uint32_t>> flat;
  std::vector<fn_info> mpi_info;
  if (rank == 0) {
    std::vector<local_defs> defs(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r)
      if (!deserialize(all[static_cast<size_t>(r)], defs[static_cast<size_t>(r)]))
        s->host->log(s->self, ("rank " + std::to_string(r) +
                               " sent unreadable definitions; its events are left out")
                                  .c_str());
    std::vector<rank_map> maps;
    unify(defs, g, maps);
    for (const rank_map& m : maps)
      flat.push_back(flatten(m));
    for (const std::string& name : g.mpi_regions)
      mpi_info.push_back(classify(name));
  }
  rank_map map;
  const bool mapped = unflatten(scatter_maps(flat, rank, size), map) &&
                      map.mpi_region.size() == li.defs.mpi_regions.size() &&
                      map.user_region.size() == li.defs.user_regions.size() &&
                      map.site.size() == li.defs.sites.size() &&
                      map.comm.size() == li.defs.comms.size();

  // The directory, checked on rank 0 before OTF2 (which refuses to overwrite and would leave the
  // ranks disagreeing mid-collective).
  int usable = 1;
  if (rank == 0) {
    const std::string why = prepare_directory(s->dir);
    if (!why.empty()) {
      s->host->log(s->self, ("no trace written: " + why).c_str());
      usable = 0;
    }
  }
  MPI_Bcast(&usable, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (usable == 0)
    return;

  // Events: each rank its own location, through OTF2's MPI collectives.
  OTF2_Archive* archive =
      OTF2_Archive_Open(s->dir.c_str(), "traces", OTF2_FILEMODE_WRITE, uint64_t{1} << 20,
                        uint64_t{4} << 20, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (archive == nullptr) {
    if (rank == 0)
      s->host->log(s->self, ("cannot create the trace in " + s->dir).c_str());
    return;
  }
  OTF2_Archive_SetFlushCallbacks(archive, &flush_callbacks, nullptr);
  OTF2_MPI_Archive_SetCollectiveCallbacks(archive, MPI_COMM_WORLD, MPI_COMM_NULL);
  OTF2_Archive_OpenEvtFiles(archive);
  OTF2_EvtWriter* ew = OTF2_Archive_GetEvtWriter(archive, static_cast<OTF2_LocationRef>(rank));
  rank_figures mine;
  {
    event_writer writer{s, ew, li, map, OTF2_AttributeList_New(), 0, {}, {}, false, 0, 0, {}, 0};
    bool first = true;
    if (mapped)
      s->buffer->for_each([&](const record& r) {
        // MPI_Init is recorded before the window is known.
        if (r.kind() == record_kind::mpi_call && r.t_enter < s->window_begin)
          return;
        const uint64_t before = writer.events;
        writer.write(r);
        if (first && writer.events > before) {
          mine.first = writer.last_time;
          first = false;
        }
      });
    writer.finish();
    mine.events = writer.events;
    mine.last = writer.last_time;
  }
  OTF2_Archive_CloseEvtWriter(archive, ew);
  OTF2_Archive_CloseEvtFiles(archive);
  OTF2_Archive_OpenDefFiles(archive);
  OTF2_DefWriter* dw = OTF2_Archive_GetDefWriter(archive, static_cast<OTF2_LocationRef>(rank));
  // Timestamps are already on rank 0's clock: what is left of the offset is 0, within the
  // measurement's uncertainty (half the best round trip).
  OTF2_DefWriter_WriteClockOffset(dw, s->clock.correct(s->clock.t1), 0, s->stddev_init);
  OTF2_DefWriter_WriteClockOffset(dw, s->clock.correct(s->clock.t2), 0, s->stddev_final);
  OTF2_Archive_CloseDefWriter(archive, dw);
  OTF2_Archive_CloseDefFiles(archive);

  mine.dropped = s->buffer->dropped();
  mine.offset_init = s->clock.o1;
  mine.offset_final = s->clock.o2;
  std::vector<rank_figures> ranks(static_cast<size_t>(rank == 0 ? size : 0));
  MPI_Gather(&mine, 6, MPI_UINT64_T, ranks.data(), 6, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (rank == 0)
    write_global_defs(archive, s, g, ranks, mpi_info);
  OTF2_Archive_Close(archive);

  if (s->unbalanced_ends > 0)
    s->host->log(s->self,
                 ("rank " + std::to_string(rank) + ": " + std::to_string(s->unbalanced_ends) +
                  " region ends without a begin were ignored")
                     .c_str());
  if (mine.dropped > 0) {
    const std::string line =
        "rank " + std::to_string(rank) + " dropped " + std::to_string(mine.dropped) +
        " events at limit=" + std::to_string(s->opt.limit_bytes) + " bytes (policy " +
        (s->opt.policy == limit_policy::ring ? "ring" : "stop") + ")";
    s->host->log(s->self, line.c_str());
  }
  if (rank == 0) {
    uint64_t events = 0;
    uint64_t dropped = 0;
    for (const rank_figures& r : ranks) {
      events += r.events;
      dropped += r.dropped;
    }
    std::string line = std::to_string(events) + " events of " + std::to_string(size) +
                       " ranks in " + s->dir + "/traces.otf2";
    if (dropped > 0)
      line += " (" + std::to_string(dropped) + " dropped at the size limit)";
    s->host->log(s->self, line.c_str());
  }
}

} // namespace strata::trace
