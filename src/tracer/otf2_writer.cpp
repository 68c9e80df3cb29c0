#include "tracer/otf2_writer.hpp"

#include <strata/version.h>

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

constexpr uint64_t otf2_chunk_bytes = uint64_t{1} << 20;
constexpr uint64_t pool_bytes = uint64_t{4} << 20;

// Strings are numbered in the order they are first asked for, each text once.
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

} // namespace

struct archive_writer::open_location {
  OTF2_AttributeList* attributes = OTF2_AttributeList_New();
  location_writer events;
  explicit open_location(OTF2_EvtWriter* w) : events(w, attributes) {}
  ~open_location() { OTF2_AttributeList_Delete(attributes); }
  open_location(const open_location&) = delete;
  open_location& operator=(const open_location&) = delete;
};

archive_writer::archive_writer(const std::string& dir) {
  // OTF2 prints every failure (a full disk: a line per buffer it could not write); the writer
  // keeps the first instead, for the caller's one line.
  previous_callback_ = OTF2_Error_RegisterCallback(keep_error, this);
  archive_ = OTF2_Archive_Open(dir.c_str(), "traces", OTF2_FILEMODE_WRITE, otf2_chunk_bytes,
                               pool_bytes, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (archive_ == nullptr) {
    error_ = "cannot create an OTF2 archive in " + dir;
    return;
  }
  check(OTF2_Archive_SetFlushCallbacks(archive_, &flush_callbacks, nullptr), "flush callbacks");
  // Which release wrote it, for the analyzer's header (and OTF2's own tools).
  check(OTF2_Archive_SetCreator(archive_, "Strata " STRATA_VERSION), "creator");
  check(OTF2_Archive_SetProperty(archive_, "STRATA::VERSION", STRATA_VERSION, true),
        "version property");
}

archive_writer::~archive_writer() {
  close();
}

OTF2_ErrorCode archive_writer::keep_error(void* self, const char*, uint64_t, const char*,
                                          OTF2_ErrorCode code, const char*, va_list) {
  // The description is the cause ("No space left on device"); the message adds OTF2's own
  // steps ("POSIX: Posix call 'fclose()' failed!").
  auto* writer = static_cast<archive_writer*>(self);
  if (writer->error_.empty())
    writer->error_ = OTF2_Error_GetDescription(code);
  return code;
}

OTF2_ErrorCode archive_writer::check(OTF2_ErrorCode rc, const char* what) {
  if (rc != OTF2_SUCCESS && error_.empty())
    error_ = std::string(what) + ": " + OTF2_Error_GetDescription(rc);
  return rc;
}

OTF2_ErrorCode archive_writer::use_serial_collectives() {
  return check(OTF2_Archive_SetSerialCollectiveCallbacks(archive_), "serial collectives");
}

OTF2_ErrorCode archive_writer::open_event_files() {
  return check(OTF2_Archive_OpenEvtFiles(archive_), "open the event files");
}

location_writer& archive_writer::location(uint64_t id) {
  if (id >= locations_.size())
    locations_.resize(id + 1);
  if (!locations_[id])
    locations_[id] = std::make_unique<open_location>(OTF2_Archive_GetEvtWriter(archive_, id));
  return locations_[id]->events;
}

OTF2_ErrorCode archive_writer::close_event_files() {
  OTF2_ErrorCode first = OTF2_SUCCESS;
  for (auto& l : locations_)
    if (l) {
      const OTF2_ErrorCode rc =
          check(OTF2_Archive_CloseEvtWriter(archive_, l->events.handle()), "close events");
      if (first == OTF2_SUCCESS)
        first = rc;
    }
  locations_.clear();
  const OTF2_ErrorCode rc = check(OTF2_Archive_CloseEvtFiles(archive_), "close the event files");
  return first != OTF2_SUCCESS ? first : rc;
}

OTF2_ErrorCode
archive_writer::write_local_definitions(const std::vector<local_definitions>& locations) {
  OTF2_ErrorCode rc = check(OTF2_Archive_OpenDefFiles(archive_), "open the definition files");
  for (const local_definitions& l : locations) {
    OTF2_DefWriter* w = OTF2_Archive_GetDefWriter(archive_, l.location);
    // Timestamps are already on the job's clock: what is left of the offset is 0, within the
    // measurement's uncertainty.
    for (const clock_offset& c : l.clock)
      check(OTF2_DefWriter_WriteClockOffset(w, c.time, c.offset, c.stddev), "clock offset");
    check(OTF2_Archive_CloseDefWriter(archive_, w), "close local definitions");
  }
  const OTF2_ErrorCode closed =
      check(OTF2_Archive_CloseDefFiles(archive_), "close the definition files");
  return rc != OTF2_SUCCESS ? rc : closed;
}

OTF2_ErrorCode archive_writer::write_global_definitions(const archive_definitions& d) {
  OTF2_GlobalDefWriter* w = OTF2_Archive_GetGlobalDefWriter(archive_);
  if (w == nullptr)
    return check(OTF2_ERROR_INVALID, "global definitions");
  OTF2_ErrorCode first = OTF2_SUCCESS;
  auto ok = [&](OTF2_ErrorCode rc) {
    if (check(rc, "global definitions") != OTF2_SUCCESS && first == OTF2_SUCCESS)
      first = rc;
  };
  ok(OTF2_GlobalDefWriter_WriteClockProperties(w, 1000000000u, d.first_time, d.length,
                                               d.realtime_ns));

  // Strings first (everything refers to them), then the definitions that use them.
  string_table str;
  const OTF2_StringRef empty = str("");
  const OTF2_StringRef mpi_name = str("MPI");
  const OTF2_StringRef user_name = str("user");
  const OTF2_StringRef site_name = str("strata:call_site");
  const OTF2_StringRef site_doc = str("where the program entered the region (file, line)");
  const OTF2_StringRef polls_name = str("strata:polls");
  const OTF2_StringRef polls_doc =
      str("calls this Enter/Leave pair stands for: polls in a row that completed nothing, from "
          "the first one's enter to the last one's leave");
  const OTF2_StringRef poll_time_name = str("strata:poll_time_ns");
  const OTF2_StringRef poll_time_doc =
      str("time inside those calls (ns); the rest of the pair's span is the program's own");
  const OTF2_StringRef partitioned_name = str("strata:partitioned");
  const OTF2_StringRef partitioned_doc =
      str("1: the message of one start of a partitioned request (MPI_Psend_init, "
          "MPI_Precv_init), every partition");
  std::vector<OTF2_StringRef> rank_names;
  for (size_t r = 0; r < d.ranks.size(); ++r)
    rank_names.push_back(str("rank " + std::to_string(r)));
  const OTF2_StringRef machine = str("machine");
  const OTF2_StringRef node = str("node");
  std::vector<OTF2_StringRef> host_names;
  for (const std::string& h : d.hosts)
    host_names.push_back(str(h));
  std::vector<OTF2_StringRef> region_names;
  for (const archive_definitions::region& region : d.regions)
    region_names.push_back(str(region.name));
  std::vector<OTF2_StringRef> site_files;
  for (const archive_definitions::source_location& site : d.sites)
    site_files.push_back(str(site.file));
  std::vector<OTF2_StringRef> comm_names;
  for (const archive_definitions::communicator& c : d.comms)
    comm_names.push_back(str(c.name));
  const OTF2_StringRef locations_name = str("MPI locations");
  const OTF2_StringRef window_name = str("MPI windows (targets as world ranks)");
  const OTF2_StringRef dropped_name = str("strata:dropped_events");
  const OTF2_StringRef dropped_after_name = str("strata:dropped_after_ns");
  const OTF2_StringRef dropped_before_name = str("strata:dropped_before_ns");
  std::vector<std::vector<OTF2_StringRef>> counted_names(d.ranks.size());
  for (size_t r = 0; r < d.ranks.size(); ++r)
    for (const auto& [routine, calls] : d.ranks[r].counted_calls)
      counted_names[r].push_back(str("strata:counted_calls:" + routine));
  const OTF2_StringRef offset_init_name = str("strata:clock_offset_init_ns");
  const OTF2_StringRef offset_final_name = str("strata:clock_offset_finalize_ns");
  for (size_t i = 0; i < str.list.size(); ++i)
    ok(OTF2_GlobalDefWriter_WriteString(w, static_cast<OTF2_StringRef>(i), str.list[i].c_str()));

  ok(OTF2_GlobalDefWriter_WriteParadigm(w, OTF2_PARADIGM_MPI, mpi_name,
                                        OTF2_PARADIGM_CLASS_PROCESS));
  ok(OTF2_GlobalDefWriter_WriteParadigm(w, OTF2_PARADIGM_USER, user_name,
                                        OTF2_PARADIGM_CLASS_PROCESS));
  ok(OTF2_GlobalDefWriter_WriteAttribute(w, location_writer::call_site_attribute, site_name,
                                         site_doc, OTF2_TYPE_SOURCE_CODE_LOCATION));
  ok(OTF2_GlobalDefWriter_WriteAttribute(w, location_writer::polls_attribute, polls_name, polls_doc,
                                         OTF2_TYPE_UINT64));
  ok(OTF2_GlobalDefWriter_WriteAttribute(w, location_writer::poll_time_attribute, poll_time_name,
                                         poll_time_doc, OTF2_TYPE_UINT64));
  ok(OTF2_GlobalDefWriter_WriteAttribute(w, location_writer::partitioned_attribute,
                                         partitioned_name, partitioned_doc, OTF2_TYPE_UINT8));
  ok(OTF2_GlobalDefWriter_WriteSystemTreeNode(w, 0, machine, machine,
                                              OTF2_UNDEFINED_SYSTEM_TREE_NODE));
  for (size_t h = 0; h < d.hosts.size(); ++h)
    ok(OTF2_GlobalDefWriter_WriteSystemTreeNode(w, static_cast<OTF2_SystemTreeNodeRef>(h + 1),
                                                host_names[h], node, 0));
  for (size_t r = 0; r < d.ranks.size(); ++r)
    ok(OTF2_GlobalDefWriter_WriteLocationGroup(
        w, static_cast<OTF2_LocationGroupRef>(r), rank_names[r], OTF2_LOCATION_GROUP_TYPE_PROCESS,
        static_cast<OTF2_SystemTreeNodeRef>(d.ranks[r].host + 1), OTF2_UNDEFINED_LOCATION_GROUP));
  for (size_t r = 0; r < d.ranks.size(); ++r)
    ok(OTF2_GlobalDefWriter_WriteLocation(w, static_cast<OTF2_LocationRef>(r), rank_names[r],
                                          OTF2_LOCATION_TYPE_CPU_THREAD, d.ranks[r].events,
                                          static_cast<OTF2_LocationGroupRef>(r)));
  for (size_t i = 0; i < d.regions.size(); ++i)
    ok(OTF2_GlobalDefWriter_WriteRegion(w, static_cast<OTF2_RegionRef>(i), region_names[i],
                                        region_names[i], empty, d.regions[i].role,
                                        d.regions[i].paradigm, OTF2_REGION_FLAG_NONE, empty, 0, 0));
  for (size_t i = 0; i < d.sites.size(); ++i)
    ok(OTF2_GlobalDefWriter_WriteSourceCodeLocation(w, static_cast<OTF2_SourceCodeLocationRef>(i),
                                                    site_files[i], d.sites[i].line));
  // Group 0: the MPI locations (world rank r = location r); group c+1: communicator c's members
  // as world ranks, i.e. indices into group 0.
  std::vector<uint64_t> members;
  for (size_t r = 0; r < d.ranks.size(); ++r)
    members.push_back(r);
  ok(OTF2_GlobalDefWriter_WriteGroup(w, 0, locations_name, OTF2_GROUP_TYPE_COMM_LOCATIONS,
                                     OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                     static_cast<uint32_t>(members.size()), members.data()));
  for (size_t c = 0; c < d.comms.size(); ++c) {
    const std::vector<uint64_t>& ranks = d.comms[c].world_ranks;
    ok(OTF2_GlobalDefWriter_WriteGroup(w, static_cast<OTF2_GroupRef>(c + 1), comm_names[c],
                                       OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                       OTF2_GROUP_FLAG_NONE, static_cast<uint32_t>(ranks.size()),
                                       ranks.data()));
    ok(OTF2_GlobalDefWriter_WriteComm(w, static_cast<OTF2_CommRef>(c), comm_names[c],
                                      static_cast<OTF2_GroupRef>(c + 1), OTF2_UNDEFINED_COMM,
                                      OTF2_COMM_FLAG_NONE));
  }
  if (d.one_sided_comm >= 0)
    ok(OTF2_GlobalDefWriter_WriteRmaWin(w, location_writer::one_sided_window, window_name,
                                        static_cast<OTF2_CommRef>(d.one_sided_comm),
                                        OTF2_RMA_WIN_FLAG_NONE));
  for (size_t r = 0; r < d.ranks.size(); ++r) {
    OTF2_AttributeValue v;
    v.uint64 = d.ranks[r].dropped;
    ok(OTF2_GlobalDefWriter_WriteLocationProperty(w, static_cast<OTF2_LocationRef>(r), dropped_name,
                                                  OTF2_TYPE_UINT64, v));
    v.int64 = d.ranks[r].offset_init_ns;
    ok(OTF2_GlobalDefWriter_WriteLocationProperty(w, static_cast<OTF2_LocationRef>(r),
                                                  offset_init_name, OTF2_TYPE_INT64, v));
    v.int64 = d.ranks[r].offset_final_ns;
    ok(OTF2_GlobalDefWriter_WriteLocationProperty(w, static_cast<OTF2_LocationRef>(r),
                                                  offset_final_name, OTF2_TYPE_INT64, v));
    for (const auto& [name, time] : {std::pair{dropped_after_name, d.ranks[r].dropped_after},
                                     std::pair{dropped_before_name, d.ranks[r].dropped_before}})
      if (time != 0) {
        v.uint64 = time;
        ok(OTF2_GlobalDefWriter_WriteLocationProperty(w, static_cast<OTF2_LocationRef>(r), name,
                                                      OTF2_TYPE_UINT64, v));
      }
    for (size_t i = 0; i < d.ranks[r].counted_calls.size(); ++i) {
      v.uint64 = d.ranks[r].counted_calls[i].second;
      ok(OTF2_GlobalDefWriter_WriteLocationProperty(w, static_cast<OTF2_LocationRef>(r),
                                                    counted_names[r][i], OTF2_TYPE_UINT64, v));
    }
  }
  return first;
}

OTF2_ErrorCode archive_writer::close() {
  OTF2_ErrorCode rc = OTF2_SUCCESS;
  if (archive_ != nullptr) {
    locations_.clear();
    OTF2_Archive* archive = archive_;
    archive_ = nullptr;
    rc = check(OTF2_Archive_Close(archive), "close the archive");
  }
  if (previous_callback_ != keep_error) {
    // OTF2's handler as it was, unless another was set meanwhile (then that one stays).
    const OTF2_ErrorCallback current = OTF2_Error_RegisterCallback(previous_callback_, nullptr);
    if (current != keep_error)
      OTF2_Error_RegisterCallback(current, nullptr);
    previous_callback_ = keep_error;
  }
  return rc;
}

std::string prepare_archive_directory(const std::string& dir) {
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

} // namespace strata::trace
