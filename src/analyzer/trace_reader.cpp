#include "analyzer/trace_reader.hpp"
#include "analyzer/anchor_probe.hpp"
#include "analyzer/otf2_definitions.hpp"
#include "common/message_kinds.hpp"

#include <otf2/otf2.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <unordered_map>

namespace strata::analyze {
namespace fs = std::filesystem;
using otf2_definitions::grow_to;
using otf2_definitions::install_error_capture;
using otf2_definitions::otf2_reason;
using otf2_definitions::raw_definitions;
using otf2_definitions::raw_location;
using otf2_definitions::raw_region;

std::string anchor_path(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const fs::path standard = fs::path(path) / "traces.otf2";
    if (fs::exists(standard, ec))
      return standard.string();
    // Score-P and others name the anchor after the experiment; take the only one there is.
    std::vector<fs::path> anchors;
    for (const auto& entry : fs::directory_iterator(path, ec))
      if (entry.path().extension() == ".otf2" && entry.is_regular_file(ec))
        anchors.push_back(entry.path());
    if (anchors.size() == 1)
      return anchors.front().string();
    if (anchors.empty())
      throw trace_error(path + ": no OTF2 anchor file (traces.otf2) in this directory");
    throw trace_error(path + ": several OTF2 anchor files here; name one of them");
  }
  if (!fs::exists(path, ec))
    throw trace_error(path + ": no such trace archive");
  return path;
}

struct trace_reader::state {
  OTF2_Reader* reader = nullptr;
  std::unordered_map<uint64_t, uint32_t> rank_of_location;
  std::vector<uint32_t> rank_of_small_location; // for location ids below 2^20, the usual case
  std::vector<uint8_t> comm_is_self;
  std::vector<uint32_t> window_comm; // by RMA window ref; UINT32_MAX: undefined
  std::vector<uint64_t> events_seen;
  OTF2_AttributeRef call_site_attr = UINT32_MAX;
  OTF2_AttributeRef partitioned_attr = UINT32_MAX;
  event_handler* handler = nullptr;
  const definitions* defs = nullptr;
  std::exception_ptr failure;
  std::string bad;
  // Events skipped for what they refer to: how many, and the first one's description.
  uint64_t odd_events = 0;
  std::string first_odd;
  OTF2_GlobalEvtReader* global = nullptr; // while events are being read
  uint32_t first = 0, last = 0;           // the ranks being read
  uint64_t read = 0;                      // records read so far

  uint32_t rank(uint64_t location) {
    if (location < rank_of_small_location.size())
      return rank_of_small_location[location];
    auto it = rank_of_location.find(location);
    return it == rank_of_location.end() ? UINT32_MAX : it->second;
  }
};

namespace {
using reader_state = trace_reader::state;

// Every callback checks what the event refers to, so the analyzer never indexes out of bounds on
// a corrupt archive.
bool check_location(reader_state* s, uint32_t rank, uint64_t location) {
  if (rank != UINT32_MAX) {
    ++s->events_seen[rank];
    return true;
  }
  s->bad = "event on undefined location " + std::to_string(location);
  return false;
}

// An event whose references do not hold (an undefined region or communicator, a peer outside its
// communicator) is left out with a warning: one odd event does not make the archive unreadable.
bool odd_event(reader_state* s, uint32_t rank, const std::string& what) {
  if (s->odd_events++ == 0)
    s->first_odd = "rank " + std::to_string(rank) + ": " + what;
  return false;
}

bool check_region(reader_state* s, uint32_t rank, uint32_t region) {
  if (region < s->defs->regions.size() && !s->defs->regions[region].name.empty())
    return true;
  return odd_event(s, rank, "event refers to undefined region " + std::to_string(region));
}

bool check_comm(reader_state* s, uint32_t rank, uint32_t comm) {
  if (comm < s->defs->comms.size() &&
      (!s->defs->comms[comm].world_ranks.empty() || s->comm_is_self[comm]))
    return true;
  return odd_event(s, rank, "event refers to undefined communicator " + std::to_string(comm));
}

// The body returns false to leave the event out; a location the definitions do not have, or an
// exception, stops the reading.
template <class F> OTF2_CallbackCode guarded(reader_state* s, F&& body) {
  try {
    body();
    if (!s->bad.empty())
      return OTF2_CALLBACK_INTERRUPT;
    return OTF2_CALLBACK_SUCCESS;
  } catch (...) {
    s->failure = std::current_exception();
    return OTF2_CALLBACK_INTERRUPT;
  }
}

// Peers arrive as ranks within the communicator; the analysis wants world ranks. In a self
// communicator the peer is the calling rank, whatever OTF2 stores.
bool to_world(reader_state* s, uint32_t comm, uint32_t rank, uint32_t& peer) {
  if (s->comm_is_self[comm]) {
    peer = rank;
    return true;
  }
  const auto& members = s->defs->comms[comm].world_ranks;
  if (peer < members.size()) {
    peer = members[peer];
    return true;
  }
  return odd_event(s, rank,
                   "peer " + std::to_string(peer) + " outside communicator " +
                       std::to_string(comm) + " of " + std::to_string(members.size()) + " ranks");
}

OTF2_CallbackCode ev_enter(OTF2_LocationRef loc, OTF2_TimeStamp t, void* data,
                           OTF2_AttributeList* attrs, OTF2_RegionRef region) {
  auto* s = static_cast<reader_state*>(data);
  return guarded(s, [&] {
    const uint32_t rank = s->rank(loc);
    if (!check_location(s, rank, loc) || !check_region(s, rank, region))
      return false;
    uint32_t site = no_call_site;
    OTF2_SourceCodeLocationRef ref;
    if (attrs && s->call_site_attr != UINT32_MAX &&
        OTF2_AttributeList_GetSourceCodeLocationRef(attrs, s->call_site_attr, &ref) ==
            OTF2_SUCCESS) {
      if (ref < s->defs->call_sites.size())
        site = ref;
      else
        odd_event(s, rank,
                  "call site refers to undefined source code location " + std::to_string(ref));
    }
    s->handler->enter(rank, t, region, site);
    return true;
  });
}

OTF2_CallbackCode ev_leave(OTF2_LocationRef loc, OTF2_TimeStamp t, void* data, OTF2_AttributeList*,
                           OTF2_RegionRef region) {
  auto* s = static_cast<reader_state*>(data);
  return guarded(s, [&] {
    const uint32_t rank = s->rank(loc);
    if (!check_location(s, rank, loc) || !check_region(s, rank, region))
      return false;
    s->handler->leave(rank, t, region);
    return true;
  });
}

// An event that names only its location (a request completed or cancelled, the program's begin
// and end): the handler hears of it once the location is known.
template <class Deliver>
OTF2_CallbackCode location_event(OTF2_LocationRef loc, void* data, Deliver&& deliver) {
  auto* s = static_cast<reader_state*>(data);
  return guarded(s, [&] {
    const uint32_t rank = s->rank(loc);
    if (!check_location(s, rank, loc))
      return false;
    deliver(*s->handler, rank);
    return true;
  });
}

// A message sent or received: the location, the communicator and the peer must hold; the handler
// hears of it with the peer as a world rank.
template <class Deliver>
OTF2_CallbackCode message_event(OTF2_LocationRef loc, void* data, OTF2_CommRef comm, uint32_t peer,
                                Deliver&& deliver) {
  auto* s = static_cast<reader_state*>(data);
  return guarded(s, [&] {
    const uint32_t rank = s->rank(loc);
    if (!check_location(s, rank, loc) || !check_comm(s, rank, comm) ||
        !to_world(s, comm, rank, peer))
      return false;
    deliver(*s->handler, rank, peer);
    return true;
  });
}

// MPI_Send and MPI_Recv (the handler's send or recv).
template <auto deliver>
OTF2_CallbackCode ev_message(OTF2_LocationRef loc, OTF2_TimeStamp t, void* data,
                             OTF2_AttributeList*, uint32_t peer, OTF2_CommRef comm, uint32_t tag,
                             uint64_t bytes) {
  return message_event(loc, data, comm, peer,
                       [&](event_handler& h, uint32_t rank, uint32_t world_peer) {
                         (h.*deliver)(rank, t, world_peer, comm, tag, bytes);
                       });
}

// MPI_Isend and MPI_Irecv (the handler's isend or irecv).
template <auto deliver>
OTF2_CallbackCode ev_request_message(OTF2_LocationRef loc, OTF2_TimeStamp t, void* data,
                                     OTF2_AttributeList*, uint32_t peer, OTF2_CommRef comm,
                                     uint32_t tag, uint64_t bytes, uint64_t request) {
  return message_event(loc, data, comm, peer,
                       [&](event_handler& h, uint32_t rank, uint32_t world_peer) {
                         (h.*deliver)(rank, t, world_peer, comm, tag, bytes, request);
                       });
}

// MPI_Isend, or the start of a partitioned send when the `strata:partitioned` attribute says so.
OTF2_CallbackCode ev_isend(OTF2_LocationRef loc, OTF2_TimeStamp t, void* data,
                           OTF2_AttributeList* attrs, uint32_t peer, OTF2_CommRef comm,
                           uint32_t tag, uint64_t bytes, uint64_t request) {
  auto* s = static_cast<reader_state*>(data);
  uint8_t mark = 0;
  const bool partitioned =
      attrs != nullptr && s->partitioned_attr != UINT32_MAX &&
      OTF2_AttributeList_GetUint8(attrs, s->partitioned_attr, &mark) == OTF2_SUCCESS && mark != 0;
  return message_event(loc, data, comm, peer,
                       [&](event_handler& h, uint32_t rank, uint32_t world_peer) {
                         if (partitioned)
                           h.partitioned_isend(rank, t, world_peer, comm, tag, bytes, request);
                         else
                           h.isend(rank, t, world_peer, comm, tag, bytes, request);
                       });
}

// A request completed, asked for or cancelled (isend_complete, irecv_request,
// request_cancelled).
template <auto deliver>
OTF2_CallbackCode ev_request(OTF2_LocationRef loc, OTF2_TimeStamp t, void* data,
                             OTF2_AttributeList*, uint64_t request) {
  return location_event(loc, data,
                        [&](event_handler& h, uint32_t rank) { (h.*deliver)(rank, t, request); });
}

OTF2_CallbackCode ev_collective_begin(OTF2_LocationRef loc, OTF2_TimeStamp, void* data,
                                      OTF2_AttributeList*) {
  auto* s = static_cast<reader_state*>(data);
  return guarded(s, [&] { return check_location(s, s->rank(loc), loc); });
}

OTF2_CallbackCode ev_collective_end(OTF2_LocationRef loc, OTF2_TimeStamp t, void* data,
                                    OTF2_AttributeList*, OTF2_CollectiveOp op, OTF2_CommRef comm,
                                    uint32_t root, uint64_t sent, uint64_t received) {
  auto* s = static_cast<reader_state*>(data);
  return guarded(s, [&] {
    const uint32_t rank = s->rank(loc);
    if (!check_location(s, rank, loc) || !check_comm(s, rank, comm))
      return false;
    if (root != OTF2_UNDEFINED_UINT32 && !to_world(s, comm, rank, root))
      return false;
    s->handler->collective_end(rank, t, op, comm, root, sent, received);
    return true;
  });
}

// A one-sided operation: its window's communicator names the target.
OTF2_CallbackCode one_sided_event(OTF2_LocationRef loc, OTF2_TimeStamp t, void* data,
                                  OTF2_RmaWinRef win, uint32_t target, uint8_t kind,
                                  uint64_t bytes) {
  auto* s = static_cast<reader_state*>(data);
  return guarded(s, [&] {
    const uint32_t rank = s->rank(loc);
    if (!check_location(s, rank, loc))
      return false;
    const uint32_t comm = win < s->window_comm.size() ? s->window_comm[win] : UINT32_MAX;
    if (comm == UINT32_MAX)
      return odd_event(s, rank, "event refers to undefined RMA window " + std::to_string(win));
    if (!check_comm(s, rank, comm) || !to_world(s, comm, rank, target))
      return false;
    s->handler->one_sided(rank, t, kind, target, bytes);
    return true;
  });
}

OTF2_CallbackCode ev_rma_put(OTF2_LocationRef loc, OTF2_TimeStamp t, void* data,
                             OTF2_AttributeList*, OTF2_RmaWinRef win, uint32_t target,
                             uint64_t bytes, uint64_t) {
  return one_sided_event(loc, t, data, win, target, common::pair_kind_put, bytes);
}

OTF2_CallbackCode ev_rma_get(OTF2_LocationRef loc, OTF2_TimeStamp t, void* data,
                             OTF2_AttributeList*, OTF2_RmaWinRef win, uint32_t target,
                             uint64_t bytes, uint64_t) {
  return one_sided_event(loc, t, data, win, target, common::pair_kind_get, bytes);
}

// Accumulate-type operations: the bytes the origin contributes.
OTF2_CallbackCode ev_rma_atomic(OTF2_LocationRef loc, OTF2_TimeStamp t, void* data,
                                OTF2_AttributeList*, OTF2_RmaWinRef win, uint32_t target,
                                OTF2_RmaAtomicType, uint64_t sent, uint64_t, uint64_t) {
  return one_sided_event(loc, t, data, win, target, common::pair_kind_accumulate, sent);
}

OTF2_CallbackCode ev_program_begin(OTF2_LocationRef loc, OTF2_TimeStamp t, void* data,
                                   OTF2_AttributeList*, OTF2_StringRef, uint32_t,
                                   const OTF2_StringRef*) {
  return location_event(loc, data,
                        [&](event_handler& h, uint32_t rank) { h.program_event(rank, t); });
}

OTF2_CallbackCode ev_program_end(OTF2_LocationRef loc, OTF2_TimeStamp t, void* data,
                                 OTF2_AttributeList*, int64_t) {
  return location_event(loc, data,
                        [&](event_handler& h, uint32_t rank) { h.program_event(rank, t); });
}

// Events the analysis does not use still count, so the truncation check sees them.
OTF2_CallbackCode ev_other(OTF2_LocationRef loc, OTF2_TimeStamp, void* data, OTF2_AttributeList*) {
  auto* s = static_cast<reader_state*>(data);
  return guarded(s, [&] { return check_location(s, s->rank(loc), loc); });
}

} // namespace

trace_reader::trace_reader(const std::string& path) {
  install_error_capture();
  const std::string anchor = anchor_path(path);
  defs_.archive = anchor;
  auto fail = [&](const std::string& what) -> trace_error {
    return trace_error(anchor + ": " + what);
  };

  if (const std::string damaged = probe_anchor(anchor); !damaged.empty())
    throw fail("a damaged OTF2 anchor file: " + damaged);
  state_ = new state;
  state_->reader = OTF2_Reader_Open(anchor.c_str());
  if (!state_->reader) {
    const std::string reason = otf2_reason(OTF2_ERROR_FILE_CAN_NOT_OPEN);
    delete state_;
    state_ = nullptr;
    throw fail("not a readable OTF2 archive (" + reason + ")");
  }
  OTF2_Reader* reader = state_->reader;
  try {
    OTF2_ErrorCode rc = OTF2_Reader_SetSerialCollectiveCallbacks(reader);
    if (rc != OTF2_SUCCESS)
      throw fail("cannot set up the OTF2 reader (" + otf2_reason(rc) + ")");
    char* creator = nullptr;
    if (OTF2_Reader_GetCreator(reader, &creator) == OTF2_SUCCESS && creator != nullptr) {
      defs_.creator = creator;
      free(creator); // NOLINT(cppcoreguidelines-no-malloc): OTF2 allocates it with malloc
    }

    raw_definitions raw;
    OTF2_GlobalDefReader* global = OTF2_Reader_GetGlobalDefReader(reader);
    if (!global)
      throw fail("cannot open the global definitions (" +
                 otf2_reason(OTF2_ERROR_FILE_CAN_NOT_OPEN) + ")");
    OTF2_GlobalDefReaderCallbacks* cb = OTF2_GlobalDefReaderCallbacks_New();
    otf2_definitions::register_callbacks(cb);
    OTF2_Reader_RegisterGlobalDefCallbacks(reader, global, cb, &raw);
    OTF2_GlobalDefReaderCallbacks_Delete(cb);
    uint64_t read = 0;
    rc = OTF2_Reader_ReadAllGlobalDefinitions(reader, global, &read);
    OTF2_Reader_CloseGlobalDefReader(reader, global);
    if (!raw.error.empty())
      throw fail("corrupt global definitions: " + raw.error);
    if (rc != OTF2_SUCCESS)
      throw fail("corrupt or truncated global definitions (" + otf2_reason(rc) + ")");
    // libotf2 3.0 reads a definitions file cut short past its end (uninitialised memory), and
    // may then report success; the anchor file's count of definitions tells.
    uint64_t expected = 0;
    if (OTF2_Reader_GetNumberOfGlobalDefinitions(reader, &expected) == OTF2_SUCCESS &&
        read != expected)
      throw fail("corrupt or truncated global definitions (" + std::to_string(read) + " of the " +
                 std::to_string(expected) + " definitions the anchor file declares)");
    if (raw.locations.empty())
      throw fail("the archive defines no locations");

    auto string = [&](uint32_t ref) -> std::string {
      if (ref == OTF2_UNDEFINED_STRING)
        return {};
      if (ref >= raw.strings.size() || !raw.string_defined[ref])
        throw fail("corrupt global definitions: undefined string " + std::to_string(ref));
      return raw.strings[ref];
    };

    // Ranks: the MPI location group lists locations in rank order (as Score-P writes it).
    std::vector<uint64_t> order;
    for (const auto& [ref, g] : raw.groups)
      if (g.type == OTF2_GROUP_TYPE_COMM_LOCATIONS && g.paradigm == OTF2_PARADIGM_MPI) {
        order = g.members;
        break;
      }
    std::unordered_map<uint64_t, const raw_location*> by_id;
    for (const auto& l : raw.locations)
      by_id[l.id] = &l;
    std::vector<uint64_t> ranks;
    std::unordered_map<uint64_t, bool> placed;
    for (uint64_t id : order)
      if (by_id.count(id) && !placed[id]) {
        ranks.push_back(id);
        placed[id] = true;
      }
    // Locations outside the MPI group (or every location, if there is no such group) follow,
    // by location group then id.
    std::vector<const raw_location*> rest;
    for (const auto& l : raw.locations)
      if (!placed[l.id])
        rest.push_back(&l);
    std::sort(rest.begin(), rest.end(), [](const raw_location* a, const raw_location* b) {
      return a->group != b->group ? a->group < b->group : a->id < b->id;
    });
    for (const auto* l : rest)
      ranks.push_back(l->id);
    for (uint32_t r = 0; r < ranks.size(); ++r) {
      defs_.location_ids.push_back(ranks[r]);
      defs_.declared_events.push_back(by_id[ranks[r]]->events);
      if (ranks[r] < (1U << 20)) {
        grow_to(state_->rank_of_small_location, ranks[r]);
        state_->rank_of_small_location[ranks[r]] = r;
      } else {
        state_->rank_of_location[ranks[r]] = r;
      }
    }
    for (size_t i = 0; i < state_->rank_of_small_location.size(); ++i)
      if (std::find(ranks.begin(), ranks.end(), i) == ranks.end())
        state_->rank_of_small_location[i] = UINT32_MAX;

    for (const raw_definitions::property& p : raw.location_properties)
      if (const uint32_t rank = state_->rank(p.location); rank != UINT32_MAX)
        defs_.notes.note(rank, string(p.name), p.value);
    defs_.notes.finish();

    defs_.regions.resize(raw.regions.size());
    for (size_t i = 0; i < raw.regions.size(); ++i) {
      const raw_region& r = raw.regions[i];
      if (!r.defined)
        continue;
      defs_.regions[i].name = string(r.name);
      if (defs_.regions[i].name.empty())
        defs_.regions[i].name = "region" + std::to_string(i);
      defs_.regions[i].cat = r.paradigm == OTF2_PARADIGM_MPI ? category::mpi : category::user;
      defs_.regions[i].file = string(r.file);
      defs_.regions[i].line = r.line;
    }
    uint32_t max_site = 0;
    for (const auto& [ref, s] : raw.sites)
      max_site = std::max(max_site, ref + 1);
    defs_.call_sites.resize(max_site);
    for (const auto& [ref, s] : raw.sites)
      defs_.call_sites[ref] = {string(s.first), s.second};

    uint32_t max_comm = 0;
    for (const auto& [ref, c] : raw.comms)
      max_comm = std::max(max_comm, ref + 1);
    defs_.comms.resize(max_comm);
    state_->comm_is_self.assign(max_comm, 0);
    for (const auto& [ref, c] : raw.comms) {
      auto g = raw.groups.find(c.second);
      if (g == raw.groups.end())
        throw fail("corrupt global definitions: communicator " + std::to_string(ref) +
                   " refers to undefined group " + std::to_string(c.second));
      defs_.comms[ref].name = string(c.first);
      if (g->second.type == OTF2_GROUP_TYPE_COMM_SELF) {
        state_->comm_is_self[ref] = 1;
        continue;
      }
      for (uint64_t member : g->second.members) {
        if (member >= ranks.size())
          throw fail("corrupt global definitions: communicator " + std::to_string(ref) +
                     " names rank " + std::to_string(member) + " of " +
                     std::to_string(ranks.size()));
        defs_.comms[ref].world_ranks.push_back(static_cast<uint32_t>(member));
      }
    }
    for (const auto& [ref, comm] : raw.windows) {
      if (comm >= max_comm || !raw.comms.contains(comm))
        throw fail("corrupt global definitions: RMA window " + std::to_string(ref) +
                   " refers to undefined communicator " + std::to_string(comm));
      if (ref >= state_->window_comm.size())
        state_->window_comm.resize(ref + 1, UINT32_MAX);
      state_->window_comm[ref] = comm;
    }
    for (const auto& [ref, name] : raw.attribute_names) {
      const std::string text = string(static_cast<uint32_t>(std::stoul(name)));
      if (text == call_site_attribute)
        state_->call_site_attr = ref;
      else if (text == partitioned_attribute)
        state_->partitioned_attr = ref;
    }
    if (raw.resolution)
      defs_.timer_resolution = raw.resolution;
    defs_.global_offset = raw.offset;
    defs_.trace_length = raw.length;
  } catch (...) {
    OTF2_Reader_Close(reader);
    delete state_;
    state_ = nullptr;
    throw;
  }
}

trace_reader::~trace_reader() {
  if (state_) {
    OTF2_Reader_Close(state_->reader);
    delete state_;
  }
}

uint64_t trace_reader::read_events(event_handler& handler) {
  return read_events(handler, 0, static_cast<uint32_t>(defs_.location_ids.size()));
}

uint64_t trace_reader::read_events(event_handler& handler, uint32_t first, uint32_t last) {
  open_events(handler, first, last);
  while (read_some(UINT64_MAX) > 0) {
  }
  return close_events();
}

void trace_reader::open_events(event_handler& handler, uint32_t first, uint32_t last) {
  OTF2_Reader* reader = state_->reader;
  last = std::min(last, static_cast<uint32_t>(defs_.location_ids.size()));
  first = std::min(first, last);
  state_->first = first;
  state_->last = last;
  state_->read = 0;
  const std::string& anchor = defs_.archive;
  auto fail = [&](const std::string& what) -> trace_error {
    return trace_error(anchor + ": " + what);
  };
  for (uint32_t r = first; r < last; ++r)
    if (const uint64_t id = defs_.location_ids[r];
        OTF2_Reader_SelectLocation(reader, id) != OTF2_SUCCESS)
      throw fail("cannot select location " + std::to_string(id) + " (" +
                 otf2_reason(OTF2_ERROR_INVALID) + ")");
  // Local definitions carry the mappings from each location's references to the global ones
  // (Score-P writes them); an archive without local definition files is fine.
  const bool have_local_defs = OTF2_Reader_OpenDefFiles(reader) == OTF2_SUCCESS;
  otf2_definitions::forget_last_error();
  OTF2_ErrorCode rc = OTF2_Reader_OpenEvtFiles(reader);
  if (rc != OTF2_SUCCESS)
    throw fail("cannot open the event files (" + otf2_reason(rc) + ")");
  for (size_t r = first; r < last; ++r) {
    const uint64_t id = defs_.location_ids[r];
    if (have_local_defs) {
      if (OTF2_DefReader* local = OTF2_Reader_GetDefReader(reader, id)) {
        uint64_t n = 0;
        rc = OTF2_Reader_ReadAllLocalDefinitions(reader, local, &n);
        OTF2_Reader_CloseDefReader(reader, local);
        if (rc != OTF2_SUCCESS)
          throw fail("corrupt local definitions of rank " + std::to_string(r) + " (" +
                     otf2_reason(rc) + ")");
      }
      otf2_definitions::forget_last_error();
    }
    if (!OTF2_Reader_GetEvtReader(reader, id))
      throw fail("cannot open the events of rank " + std::to_string(r) + " (" +
                 otf2_reason(OTF2_ERROR_FILE_CAN_NOT_OPEN) + ")");
  }
  if (have_local_defs)
    OTF2_Reader_CloseDefFiles(reader);

  OTF2_GlobalEvtReader* global = OTF2_Reader_GetGlobalEvtReader(reader);
  state_->global = global;
  if (!global)
    throw fail("cannot read the event files (" + otf2_reason(OTF2_ERROR_FILE_CAN_NOT_OPEN) + ")");
  OTF2_GlobalEvtReaderCallbacks* cb = OTF2_GlobalEvtReaderCallbacks_New();
  OTF2_GlobalEvtReaderCallbacks_SetEnterCallback(cb, ev_enter);
  OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback(cb, ev_leave);
  OTF2_GlobalEvtReaderCallbacks_SetMpiSendCallback(cb, ev_message<&event_handler::send>);
  OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCallback(cb, ev_isend);
  OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCompleteCallback(
      cb, ev_request<&event_handler::isend_complete>);
  OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvRequestCallback(
      cb, ev_request<&event_handler::irecv_request>);
  OTF2_GlobalEvtReaderCallbacks_SetMpiRecvCallback(cb, ev_message<&event_handler::recv>);
  OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvCallback(cb, ev_request_message<&event_handler::irecv>);
  OTF2_GlobalEvtReaderCallbacks_SetMpiRequestCancelledCallback(
      cb, ev_request<&event_handler::request_cancelled>);
  OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveBeginCallback(cb, ev_collective_begin);
  OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveEndCallback(cb, ev_collective_end);
  OTF2_GlobalEvtReaderCallbacks_SetRmaPutCallback(cb, ev_rma_put);
  OTF2_GlobalEvtReaderCallbacks_SetRmaGetCallback(cb, ev_rma_get);
  OTF2_GlobalEvtReaderCallbacks_SetRmaAtomicCallback(cb, ev_rma_atomic);
  OTF2_GlobalEvtReaderCallbacks_SetProgramBeginCallback(cb, ev_program_begin);
  OTF2_GlobalEvtReaderCallbacks_SetProgramEndCallback(cb, ev_program_end);
  OTF2_GlobalEvtReaderCallbacks_SetUnknownCallback(cb, ev_other);
  state_->handler = &handler;
  state_->defs = &defs_;
  state_->events_seen.assign(defs_.location_ids.size(), 0);
  OTF2_Reader_RegisterGlobalEvtCallbacks(reader, global, cb, state_);
  OTF2_GlobalEvtReaderCallbacks_Delete(cb);
}

uint64_t trace_reader::read_some(uint64_t count) {
  auto fail = [&](const std::string& what) -> trace_error {
    return trace_error(defs_.archive + ": " + what);
  };
  if (state_->global == nullptr || count == 0)
    return 0;
  uint64_t read = 0;
  otf2_definitions::forget_last_error();
  const OTF2_ErrorCode rc =
      OTF2_Reader_ReadGlobalEvents(state_->reader, state_->global, count, &read);
  state_->read += read;
  if (state_->failure)
    std::rethrow_exception(state_->failure);
  if (!state_->bad.empty())
    throw fail("corrupt events: " + state_->bad);
  if (state_->odd_events > 0)
    warnings_.push_back(std::to_string(state_->odd_events) +
                        " events left out for what they refer to (first: " + state_->first_odd +
                        ")");
  if (rc != OTF2_SUCCESS)
    throw fail("corrupt or truncated event files (" + otf2_reason(rc) + ")");
  return read;
}

uint64_t trace_reader::close_events() {
  OTF2_Reader* reader = state_->reader;
  if (state_->global != nullptr) {
    OTF2_Reader_CloseGlobalEvtReader(reader, state_->global);
    OTF2_Reader_CloseEvtFiles(reader);
    state_->global = nullptr;
  }
  const uint32_t first = state_->first;
  const uint32_t last = state_->last;
  const uint64_t read = state_->read;
  auto fail = [&](const std::string& what) -> trace_error {
    return trace_error(defs_.archive + ": " + what);
  };
  // An archive cut at a chunk boundary reads without error; the event counts its definitions
  // declare tell. (OTF2 counts every record read, also those without a callback here.)
  uint64_t declared = 0;
  for (uint32_t r = first; r < last; ++r)
    declared += defs_.declared_events[r];
  if (read < declared) {
    std::string which;
    for (size_t r = first; r < last && which.empty(); ++r)
      if (state_->events_seen[r] < defs_.declared_events[r])
        which = " (rank " + std::to_string(r) + " first)";
    throw fail("truncated: " + std::to_string(read) + " of the " + std::to_string(declared) +
               " events the definitions declare could be read" + which);
  }
  return read;
}

} // namespace strata::analyze
