#include "analyzer/trace_builder.hpp"

#include <otf2/otf2.h>

#include <stdexcept>

namespace strata::analyze {
namespace {

OTF2_FlushType pre_flush(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) {
  return OTF2_FLUSH;
}
OTF2_TimeStamp post_flush(void*, OTF2_FileType, OTF2_LocationRef) {
  return 0;
}
OTF2_FlushCallbacks flush_callbacks = {pre_flush, post_flush};

// Score-P's roles for MPI regions; readers such as Vampir colour by them.
OTF2_RegionRole mpi_role(const std::string& name) {
  if (name == "MPI_Barrier")
    return OTF2_REGION_ROLE_BARRIER;
  for (const char* p2p : {"send", "recv", "Send", "Recv"})
    if (name.find(p2p) != std::string::npos)
      return OTF2_REGION_ROLE_POINT2POINT;
  for (const char* coll : {"cast", "educe", "ather", "catter", "lltoall", "can"})
    if (name.find(coll) != std::string::npos)
      return OTF2_REGION_ROLE_COLL_OTHER;
  return OTF2_REGION_ROLE_FUNCTION;
}

void check(OTF2_ErrorCode rc, const char* what) {
  if (rc != OTF2_SUCCESS)
    throw std::runtime_error(std::string("trace_builder: ") + what + ": " +
                             OTF2_Error_GetDescription(rc));
}

} // namespace

struct trace_builder::impl {
  OTF2_Archive* archive = nullptr;
  std::vector<OTF2_EvtWriter*> writers;
  std::vector<std::string> strings;
  std::map<std::string, uint32_t> string_ids;
  struct region_def {
    uint32_t name;
    bool mpi;
  };
  std::vector<region_def> regions;
  std::map<std::string, uint32_t> region_ids;
  std::vector<std::pair<uint32_t, uint32_t>> sites; // (file, line)
  std::map<std::pair<std::string, uint32_t>, uint32_t> site_ids;
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> comms; // (name, world ranks)
  OTF2_AttributeList* attrs = OTF2_AttributeList_New();
  uint64_t last_time = 0;
  bool closed = false;

  uint32_t str(const std::string& s) {
    auto [it, inserted] = string_ids.emplace(s, static_cast<uint32_t>(strings.size()));
    if (inserted)
      strings.push_back(s);
    return it->second;
  }
  OTF2_EvtWriter* w(uint32_t rank, uint64_t t) {
    last_time = std::max(last_time, t);
    return writers.at(rank);
  }
};

trace_builder::trace_builder(const std::string& dir, uint32_t ranks)
    : impl_(std::make_unique<impl>()) {
  impl_->archive =
      OTF2_Archive_Open(dir.c_str(), "traces", OTF2_FILEMODE_WRITE, 1024ULL * 1024,
                        4ULL * 1024 * 1024, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (!impl_->archive)
    throw std::runtime_error("trace_builder: cannot create an archive in " + dir);
  check(OTF2_Archive_SetFlushCallbacks(impl_->archive, &flush_callbacks, nullptr), "flush");
  check(OTF2_Archive_SetSerialCollectiveCallbacks(impl_->archive), "collectives");
  check(OTF2_Archive_OpenEvtFiles(impl_->archive), "event files");
  for (uint32_t r = 0; r < ranks; ++r)
    impl_->writers.push_back(OTF2_Archive_GetEvtWriter(impl_->archive, r));
  std::vector<uint32_t> all(ranks);
  for (uint32_t r = 0; r < ranks; ++r)
    all[r] = r;
  comm("MPI_COMM_WORLD", all);
  impl_->str("strata:call_site");
}

trace_builder::~trace_builder() {
  try {
    close();
  } catch (...) { // NOLINT(bugprone-empty-catch): a destructor cannot report; close() can
  }
  OTF2_AttributeList_Delete(impl_->attrs);
}

uint32_t trace_builder::region(const std::string& name, bool mpi) {
  auto [it, inserted] =
      impl_->region_ids.emplace(name, static_cast<uint32_t>(impl_->regions.size()));
  if (inserted)
    impl_->regions.push_back({impl_->str(name), mpi});
  return it->second;
}

uint32_t trace_builder::site(const std::string& file, uint32_t line) {
  auto [it, inserted] = impl_->site_ids.emplace(std::make_pair(file, line),
                                                static_cast<uint32_t>(impl_->sites.size()));
  if (inserted)
    impl_->sites.emplace_back(impl_->str(file), line);
  return it->second;
}

uint32_t trace_builder::comm(const std::string& name, const std::vector<uint32_t>& world_ranks) {
  impl_->comms.emplace_back(impl_->str(name), world_ranks);
  return static_cast<uint32_t>(impl_->comms.size() - 1);
}

void trace_builder::enter(uint32_t rank, uint64_t t, uint32_t region, uint32_t site) {
  OTF2_AttributeList* attrs = nullptr;
  if (site != none) {
    OTF2_AttributeList_RemoveAllAttributes(impl_->attrs);
    OTF2_AttributeList_AddSourceCodeLocationRef(impl_->attrs, 0, site);
    attrs = impl_->attrs;
  }
  check(OTF2_EvtWriter_Enter(impl_->w(rank, t), attrs, t, region), "enter");
}
void trace_builder::leave(uint32_t rank, uint64_t t, uint32_t region) {
  check(OTF2_EvtWriter_Leave(impl_->w(rank, t), nullptr, t, region), "leave");
}
void trace_builder::send(uint32_t rank, uint64_t t, uint32_t dest, uint32_t comm, uint32_t tag,
                         uint64_t bytes) {
  check(OTF2_EvtWriter_MpiSend(impl_->w(rank, t), nullptr, t, dest, comm, tag, bytes), "send");
}
void trace_builder::isend(uint32_t rank, uint64_t t, uint32_t dest, uint32_t comm, uint32_t tag,
                          uint64_t bytes, uint64_t request) {
  check(OTF2_EvtWriter_MpiIsend(impl_->w(rank, t), nullptr, t, dest, comm, tag, bytes, request),
        "isend");
}
void trace_builder::isend_complete(uint32_t rank, uint64_t t, uint64_t request) {
  check(OTF2_EvtWriter_MpiIsendComplete(impl_->w(rank, t), nullptr, t, request), "isend complete");
}
void trace_builder::irecv_request(uint32_t rank, uint64_t t, uint64_t request) {
  check(OTF2_EvtWriter_MpiIrecvRequest(impl_->w(rank, t), nullptr, t, request), "irecv request");
}
void trace_builder::recv(uint32_t rank, uint64_t t, uint32_t source, uint32_t comm, uint32_t tag,
                         uint64_t bytes) {
  check(OTF2_EvtWriter_MpiRecv(impl_->w(rank, t), nullptr, t, source, comm, tag, bytes), "recv");
}
void trace_builder::irecv(uint32_t rank, uint64_t t, uint32_t source, uint32_t comm, uint32_t tag,
                          uint64_t bytes, uint64_t request) {
  check(OTF2_EvtWriter_MpiIrecv(impl_->w(rank, t), nullptr, t, source, comm, tag, bytes, request),
        "irecv");
}
void trace_builder::collective_begin(uint32_t rank, uint64_t t) {
  check(OTF2_EvtWriter_MpiCollectiveBegin(impl_->w(rank, t), nullptr, t), "collective begin");
}
void trace_builder::request_test(uint32_t rank, uint64_t t, uint64_t request) {
  check(OTF2_EvtWriter_MpiRequestTest(impl_->w(rank, t), nullptr, t, request), "request test");
}
void trace_builder::collective_end(uint32_t rank, uint64_t t, uint32_t op, uint32_t comm,
                                   uint32_t root, uint64_t sent, uint64_t received) {
  check(OTF2_EvtWriter_MpiCollectiveEnd(
            impl_->w(rank, t), nullptr, t, static_cast<OTF2_CollectiveOp>(op), comm,
            root == none ? OTF2_UNDEFINED_UINT32 : root, sent, received),
        "collective end");
}

void trace_builder::mpi_send(uint32_t rank, uint64_t t0, uint64_t t1, uint32_t dest, uint32_t tag,
                             uint64_t bytes, uint32_t at) {
  const uint32_t r = mpi("MPI_Send");
  enter(rank, t0, r, at);
  send(rank, t0, dest, world, tag, bytes);
  leave(rank, t1, r);
}
void trace_builder::mpi_recv(uint32_t rank, uint64_t t0, uint64_t t1, uint32_t source, uint32_t tag,
                             uint64_t bytes, uint32_t at) {
  const uint32_t r = mpi("MPI_Recv");
  enter(rank, t0, r, at);
  recv(rank, t1, source, world, tag, bytes);
  leave(rank, t1, r);
}
void trace_builder::mpi_isend(uint32_t rank, uint64_t t0, uint64_t t1, uint32_t dest, uint32_t tag,
                              uint64_t bytes, uint64_t request, uint32_t at) {
  const uint32_t r = mpi("MPI_Isend");
  enter(rank, t0, r, at);
  isend(rank, t0, dest, world, tag, bytes, request);
  leave(rank, t1, r);
}
void trace_builder::mpi_irecv(uint32_t rank, uint64_t t0, uint64_t t1, uint64_t request,
                              uint32_t at) {
  const uint32_t r = mpi("MPI_Irecv");
  enter(rank, t0, r, at);
  irecv_request(rank, t0, request);
  leave(rank, t1, r);
}
void trace_builder::mpi_wait(uint32_t rank, uint64_t t0, uint64_t t1,
                             const std::vector<completion>& done, uint32_t at) {
  const uint32_t r = mpi(done.size() == 1 ? "MPI_Wait" : "MPI_Waitall");
  enter(rank, t0, r, at);
  for (const completion& c : done) {
    if (c.receive)
      irecv(rank, t1, c.source, world, c.tag, c.bytes, c.request);
    else
      isend_complete(rank, t1, c.request);
  }
  leave(rank, t1, r);
}
void trace_builder::mpi_collective(uint32_t rank, const std::string& name, uint32_t op, uint64_t t0,
                                   uint64_t t1, uint32_t root, uint32_t comm, uint32_t at) {
  const uint32_t r = mpi(name);
  enter(rank, t0, r, at);
  collective_begin(rank, t0);
  uint32_t local_root = none;
  if (root != none) {
    const auto& members = impl_->comms.at(comm).second;
    for (uint32_t i = 0; i < members.size(); ++i)
      if (members[i] == root)
        local_root = i;
  }
  collective_end(rank, t1, op, comm, local_root, 8, 8);
  leave(rank, t1, r);
}

void trace_builder::close() {
  impl& s = *impl_;
  if (s.closed)
    return;
  s.closed = true;
  std::vector<uint64_t> events(s.writers.size());
  for (size_t r = 0; r < s.writers.size(); ++r) {
    check(OTF2_EvtWriter_GetNumberOfEvents(s.writers[r], &events[r]), "event count");
    check(OTF2_Archive_CloseEvtWriter(s.archive, s.writers[r]), "close events");
  }
  check(OTF2_Archive_CloseEvtFiles(s.archive), "close event files");
  // Empty local definition files, as readers such as otf2-print expect one per location.
  check(OTF2_Archive_OpenDefFiles(s.archive), "definition files");
  for (size_t r = 0; r < s.writers.size(); ++r)
    check(OTF2_Archive_CloseDefWriter(s.archive, OTF2_Archive_GetDefWriter(s.archive, r)),
          "local definitions");
  check(OTF2_Archive_CloseDefFiles(s.archive), "close definition files");

  // Strings first: every other definition refers to them.
  const uint32_t machine = s.str("machine");
  const uint32_t node = s.str("node");
  std::vector<uint32_t> rank_names;
  for (size_t r = 0; r < s.writers.size(); ++r)
    rank_names.push_back(s.str("MPI Rank " + std::to_string(r)));
  const uint32_t empty = s.str("");
  OTF2_GlobalDefWriter* defs = OTF2_Archive_GetGlobalDefWriter(s.archive);
  check(OTF2_GlobalDefWriter_WriteClockProperties(defs, 1'000'000'000, 0, s.last_time + 1, 0),
        "clock");
  for (uint32_t i = 0; i < s.strings.size(); ++i)
    check(OTF2_GlobalDefWriter_WriteString(defs, i, s.strings[i].c_str()), "string");
  check(OTF2_GlobalDefWriter_WriteSystemTreeNode(defs, 0, machine, node,
                                                 OTF2_UNDEFINED_SYSTEM_TREE_NODE),
        "system tree");
  for (uint32_t r = 0; r < s.writers.size(); ++r) {
    check(OTF2_GlobalDefWriter_WriteLocationGroup(defs, r, rank_names[r],
                                                  OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                                  OTF2_UNDEFINED_LOCATION_GROUP),
          "location group");
    check(OTF2_GlobalDefWriter_WriteLocation(defs, r, rank_names[r], OTF2_LOCATION_TYPE_CPU_THREAD,
                                             events[r], r),
          "location");
  }
  for (uint32_t i = 0; i < s.regions.size(); ++i)
    check(OTF2_GlobalDefWriter_WriteRegion(
              defs, i, s.regions[i].name, s.regions[i].name, empty,
              s.regions[i].mpi ? mpi_role(s.strings[s.regions[i].name])
                               : OTF2_RegionRole{OTF2_REGION_ROLE_FUNCTION},
              s.regions[i].mpi ? OTF2_PARADIGM_MPI : OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE,
              empty, 0, 0),
          "region");
  check(OTF2_GlobalDefWriter_WriteAttribute(defs, 0, s.string_ids.at("strata:call_site"), empty,
                                            OTF2_TYPE_SOURCE_CODE_LOCATION),
        "attribute");
  for (uint32_t i = 0; i < s.sites.size(); ++i)
    check(
        OTF2_GlobalDefWriter_WriteSourceCodeLocation(defs, i, s.sites[i].first, s.sites[i].second),
        "source code location");
  std::vector<uint64_t> locations(s.writers.size());
  for (uint32_t r = 0; r < s.writers.size(); ++r)
    locations[r] = r;
  // Group 0: the MPI locations in rank order; then one group of world ranks per communicator.
  check(OTF2_GlobalDefWriter_WriteGroup(defs, 0, empty, OTF2_GROUP_TYPE_COMM_LOCATIONS,
                                        OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                        static_cast<uint32_t>(locations.size()), locations.data()),
        "locations group");
  for (uint32_t c = 0; c < s.comms.size(); ++c) {
    std::vector<uint64_t> members(s.comms[c].second.begin(), s.comms[c].second.end());
    check(OTF2_GlobalDefWriter_WriteGroup(defs, c + 1, s.comms[c].first, OTF2_GROUP_TYPE_COMM_GROUP,
                                          OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                          static_cast<uint32_t>(members.size()), members.data()),
          "comm group");
    check(OTF2_GlobalDefWriter_WriteComm(defs, c, s.comms[c].first, c + 1, OTF2_UNDEFINED_COMM,
                                         OTF2_COMM_FLAG_NONE),
          "comm");
  }
  check(OTF2_Archive_CloseGlobalDefWriter(s.archive, defs), "close definitions");
  check(OTF2_Archive_Close(s.archive), "close archive");
}

} // namespace strata::analyze
