#include "analyzer/trace_builder.hpp"

#include "tracer/otf2_writer.hpp"
#include "tracer/routine_class.hpp"

#include <otf2/otf2.h>

#include <stdexcept>

namespace strata::analyze {

struct trace_builder::impl {
  trace::archive_writer archive;
  uint32_t ranks;
  trace::archive_definitions defs;
  std::vector<bool> region_mpi;
  std::map<std::string, uint32_t> region_ids;
  std::map<std::pair<std::string, uint32_t>, uint32_t> site_ids;
  uint64_t last_time = 0;
  bool closed = false;

  impl(const std::string& dir, uint32_t n) : archive(dir), ranks(n) {}

  void check(OTF2_ErrorCode rc, const char* what) const {
    if (rc != OTF2_SUCCESS)
      throw std::runtime_error(
          std::string("trace_builder: ") + what + ": " +
          (archive.error().empty() ? OTF2_Error_GetDescription(rc) : archive.error()));
  }
  trace::location_writer& w(uint32_t rank, uint64_t t) {
    if (rank >= ranks)
      throw std::out_of_range("trace_builder: no rank " + std::to_string(rank));
    last_time = std::max(last_time, t);
    return archive.location(rank);
  }
};

trace_builder::trace_builder(const std::string& dir, uint32_t ranks)
    : impl_(std::make_unique<impl>(dir, ranks)) {
  if (!impl_->archive.ok())
    throw std::runtime_error("trace_builder: cannot create an archive in " + dir);
  impl_->check(impl_->archive.use_serial_collectives(), "collectives");
  impl_->check(impl_->archive.open_event_files(), "event files");
  for (uint32_t r = 0; r < ranks; ++r)
    impl_->archive.location(r);
  std::vector<uint32_t> all(ranks);
  for (uint32_t r = 0; r < ranks; ++r)
    all[r] = r;
  comm("MPI_COMM_WORLD", all);
}

trace_builder::~trace_builder() {
  try {
    close();
  } catch (...) { // NOLINT(bugprone-empty-catch): a destructor cannot report; close() can
  }
}

uint32_t trace_builder::region(const std::string& name, bool mpi) {
  auto [it, inserted] =
      impl_->region_ids.emplace(name, static_cast<uint32_t>(impl_->defs.regions.size()));
  if (inserted)
    impl_->defs.regions.push_back(
        {name,
         mpi ? trace::role_of(trace::classify(name)) : OTF2_RegionRole{OTF2_REGION_ROLE_FUNCTION},
         mpi ? OTF2_Paradigm{OTF2_PARADIGM_MPI} : OTF2_Paradigm{OTF2_PARADIGM_USER}});
  return it->second;
}

uint32_t trace_builder::site(const std::string& file, uint32_t line) {
  auto [it, inserted] = impl_->site_ids.emplace(std::make_pair(file, line),
                                                static_cast<uint32_t>(impl_->defs.sites.size()));
  if (inserted)
    impl_->defs.sites.push_back({file, line});
  return it->second;
}

uint32_t trace_builder::comm(const std::string& name, const std::vector<uint32_t>& world_ranks) {
  impl_->defs.comms.push_back(
      {name, std::vector<uint64_t>(world_ranks.begin(), world_ranks.end())});
  return static_cast<uint32_t>(impl_->defs.comms.size() - 1);
}

void trace_builder::enter(uint32_t rank, uint64_t t, uint32_t region, uint32_t site) {
  impl_->check(impl_->w(rank, t).enter(t, region, site), "enter");
}
void trace_builder::leave(uint32_t rank, uint64_t t, uint32_t region) {
  impl_->check(impl_->w(rank, t).leave(t, region), "leave");
}
void trace_builder::send(uint32_t rank, uint64_t t, uint32_t dest, uint32_t comm, uint32_t tag,
                         uint64_t bytes) {
  impl_->check(impl_->w(rank, t).send(t, dest, comm, tag, bytes), "send");
}
void trace_builder::isend(uint32_t rank, uint64_t t, uint32_t dest, uint32_t comm, uint32_t tag,
                          uint64_t bytes, uint64_t request) {
  impl_->check(impl_->w(rank, t).isend(t, dest, comm, tag, bytes, request), "isend");
}
void trace_builder::isend_complete(uint32_t rank, uint64_t t, uint64_t request) {
  impl_->check(impl_->w(rank, t).isend_complete(t, request), "isend complete");
}
void trace_builder::irecv_request(uint32_t rank, uint64_t t, uint64_t request) {
  impl_->check(impl_->w(rank, t).irecv_request(t, request), "irecv request");
}
void trace_builder::recv(uint32_t rank, uint64_t t, uint32_t source, uint32_t comm, uint32_t tag,
                         uint64_t bytes) {
  impl_->check(impl_->w(rank, t).recv(t, source, comm, tag, bytes), "recv");
}
void trace_builder::irecv(uint32_t rank, uint64_t t, uint32_t source, uint32_t comm, uint32_t tag,
                          uint64_t bytes, uint64_t request) {
  impl_->check(impl_->w(rank, t).irecv(t, source, comm, tag, bytes, request), "irecv");
}
void trace_builder::collective_begin(uint32_t rank, uint64_t t) {
  impl_->check(impl_->w(rank, t).collective_begin(t), "collective begin");
}
void trace_builder::request_test(uint32_t rank, uint64_t t, uint64_t request) {
  impl_->check(impl_->w(rank, t).request_test(t, request), "request test");
}
void trace_builder::collective_end(uint32_t rank, uint64_t t, uint32_t op, uint32_t comm,
                                   uint32_t root, uint64_t sent, uint64_t received) {
  impl_->check(impl_->w(rank, t).collective_end(t, static_cast<OTF2_CollectiveOp>(op), comm,
                                                root == none ? OTF2_UNDEFINED_UINT32 : root, sent,
                                                received),
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
    const auto& members = impl_->defs.comms.at(comm).world_ranks;
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
  // One host, every rank on it; the clock starts at 0 (times are the caller's nanoseconds).
  s.defs.hosts = {"localhost"};
  s.defs.ranks.assign(s.ranks, {});
  for (uint32_t r = 0; r < s.ranks; ++r)
    s.defs.ranks[r].events = s.archive.location(r).events();
  s.defs.first_time = 0;
  s.defs.length = s.last_time + 1;
  s.check(s.archive.close_event_files(), "close events");
  std::vector<trace::archive_writer::local_definitions> locals(s.ranks);
  for (uint32_t r = 0; r < s.ranks; ++r)
    locals[r].location = r;
  s.check(s.archive.write_local_definitions(locals), "local definitions");
  s.check(s.archive.write_global_definitions(s.defs), "global definitions");
  s.check(s.archive.close(), "close archive");
}

} // namespace strata::analyze
