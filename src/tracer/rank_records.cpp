#include "tracer/rank_records.hpp"

#include <strata/module.h>

#include <algorithm>
#include <map>

namespace strata::trace {

local_index collect_local(const event_buffer& records, const rank_context& rank) {
  local_index li;
  li.defs.host = rank.host;
  li.mpi_region_of_fid.assign(rank.function_names.size(), -1);
  std::vector<uint64_t> addresses;
  records.for_each([&](const record& r) {
    if ((r.kind() == record_kind::mpi_call || r.kind() == record_kind::poll_run) &&
        li.mpi_region_of_fid[r.index()] < 0) {
      li.mpi_region_of_fid[r.index()] = static_cast<int32_t>(li.defs.mpi_regions.size());
      li.defs.mpi_regions.push_back(rank.function_names[r.index()]);
    }
    if (r.call_site != 0 && li.site_of_address.emplace(r.call_site, -1).second)
      addresses.push_back(r.call_site);
  });
  li.defs.user_regions = rank.region_names;
  const std::vector<source_site> places = rank.resolve(addresses);
  std::map<std::pair<std::string, uint32_t>, int32_t> site_index;
  for (size_t i = 0; i < addresses.size() && i < places.size(); ++i) {
    // Without line information (a stripped program) a place is still named by its binary and
    // offset, with line 0, as in the profile's record; an address in no known binary has none.
    if (places[i].file.empty() || places[i].file == "?")
      continue;
    auto [it, added] = site_index.emplace(std::make_pair(places[i].file, places[i].line),
                                          static_cast<int32_t>(li.defs.sites.size()));
    if (added)
      li.defs.sites.push_back(places[i]);
    li.site_of_address[addresses[i]] = it->second;
  }
  li.def_of_comm.assign(std::max<size_t>(rank.comm_members.size(), 1), -1);
  for (size_t c = 1; c < rank.comm_members.size(); ++c) {
    const std::vector<int>& members = rank.comm_members[c];
    if (std::any_of(members.begin(), members.end(), [](int r) { return r < 0; }))
      continue;
    li.def_of_comm[c] = static_cast<int32_t>(li.defs.comms.size());
    li.defs.comms.push_back(members);
  }
  return li;
}

record_writer::record_writer(location_writer& out, const std::vector<fn_info>& functions,
                             const std::vector<std::vector<int>>& comm_members,
                             const clock_line& clock, const local_index& local, const rank_map& map)
    : out_(out), functions_(functions), comm_members_(comm_members), clock_(clock), local_(local),
      map_(map) {}

uint64_t record_writer::at(uint64_t t) {
  // Corrected, and never before the previous event (the correction is not perfectly monotone
  // across a clock step, and readers expect order).
  last_time_ = std::max(last_time_, clock_.correct(t));
  return last_time_;
}

uint32_t record_writer::comm_rank(uint32_t comm, int world) {
  if (comm == 0 || world < 0)
    return OTF2_UNDEFINED_UINT32;
  if (comm_rank_of_world_.empty())
    comm_rank_of_world_.resize(comm_members_.size());
  auto& table = comm_rank_of_world_[comm];
  if (table.empty()) {
    const auto& members = comm_members_[comm];
    for (size_t r = 0; r < members.size(); ++r)
      table.emplace(members[r], static_cast<uint32_t>(r));
  }
  auto it = table.find(world);
  return it == table.end() ? OTF2_UNDEFINED_UINT32 : it->second;
}

bool record_writer::is_rank_of(uint32_t comm, int32_t rank) const {
  return global_comm(comm) != OTF2_UNDEFINED_COMM && comm < comm_members_.size() && rank >= 0 &&
         static_cast<size_t>(rank) < comm_members_[comm].size();
}

uint32_t record_writer::global_comm(uint32_t comm) const {
  if (comm >= local_.def_of_comm.size() || local_.def_of_comm[comm] < 0)
    return OTF2_UNDEFINED_COMM;
  const auto def = static_cast<size_t>(local_.def_of_comm[comm]);
  return def < map_.comm.size() ? map_.comm[def] : OTF2_UNDEFINED_COMM;
}

uint32_t record_writer::site_of(uint64_t address) const {
  if (address == 0)
    return no_call_site;
  auto it = local_.site_of_address.find(address);
  if (it == local_.site_of_address.end() || it->second < 0)
    return no_call_site;
  return map_.site[static_cast<size_t>(it->second)];
}

void record_writer::flush_leave() {
  if (pending_leave_) {
    out_.leave(at(pending_time_), pending_region_);
    pending_leave_ = false;
  }
}

bool record_writer::started(uint32_t request) const {
  return request < request_started_.size() && request_started_[request];
}

void record_writer::start(uint32_t request) {
  if (request >= request_started_.size())
    request_started_.resize(std::max<size_t>(request + 1, request_started_.size() * 2), false);
  request_started_[request] = true;
}

void record_writer::write(const record& r) {
  switch (r.kind()) {
  case record_kind::send_complete:
  case record_kind::recv_complete:
  case record_kind::cancelled:
    if (!pending_leave_ || !started(r.request))
      return; // its call or its start fell out of a ring buffer
    if (r.kind() == record_kind::send_complete)
      out_.isend_complete(at(r.t_enter), r.request);
    else if (r.kind() == record_kind::cancelled)
      out_.request_cancelled(at(r.t_enter), r.request);
    else if (is_rank_of(r.comm, r.source))
      out_.irecv(at(r.t_enter), static_cast<uint32_t>(r.source), global_comm(r.comm),
                 static_cast<uint32_t>(r.recv_tag),
                 static_cast<uint64_t>(std::max<int64_t>(r.bytes_received, 0)), r.request);
    return;
  case record_kind::started: {
    if (!pending_leave_ || r.request == 0)
      return; // its call fell out of a ring buffer
    const uint32_t comm = global_comm(r.comm);
    if (comm == OTF2_UNDEFINED_COMM || r.peer == STRATA_PROC_NULL_RANK)
      return;
    const bool partitioned = (r.index() & started_partitioned) != 0;
    if ((r.index() & started_receive) != 0) {
      out_.irecv_request(at(r.t_enter), r.request, partitioned);
    } else {
      const uint32_t peer = comm_rank(r.comm, r.peer);
      if (peer == OTF2_UNDEFINED_UINT32)
        return;
      out_.isend(at(r.t_enter), peer, comm, static_cast<uint32_t>(r.tag),
                 static_cast<uint64_t>(r.bytes_sent), r.request, partitioned);
    }
    start(r.request);
    return;
  }
  case record_kind::region_enter: {
    flush_leave();
    const uint32_t region = map_.user_region[r.index()];
    const uint32_t site = site_of(r.call_site);
    out_.enter(at(r.t_enter), region, site);
    open_regions_.push_back(region);
    return;
  }
  case record_kind::region_leave: {
    flush_leave();
    const uint32_t region = map_.user_region[r.index()];
    if (open_regions_.empty() || open_regions_.back() != region)
      return; // its enter fell out of a ring buffer
    open_regions_.pop_back();
    out_.leave(at(r.t_enter), region);
    return;
  }
  case record_kind::mpi_call:
    write_call(r);
    return;
  case record_kind::poll_run: {
    flush_leave();
    const uint32_t region =
        map_.mpi_region[static_cast<size_t>(local_.mpi_region_of_fid[r.index()])];
    const uint64_t enter = at(r.t_enter);
    if (r.polls > 1)
      out_.enter_polls(enter, region, site_of(r.call_site), r.polls, r.poll_ns);
    else
      out_.enter(enter, region, site_of(r.call_site));
    pending_leave_ = true;
    pending_time_ = r.t_leave;
    pending_region_ = region;
    return;
  }
  default:
    return;
  }
}

void record_writer::write_call(const record& r) {
  flush_leave();
  const fn_info& f = functions_[r.index()];
  const uint32_t region = map_.mpi_region[static_cast<size_t>(local_.mpi_region_of_fid[r.index()])];
  const uint32_t comm = global_comm(r.comm);
  const uint32_t site = site_of(r.call_site);
  out_.enter(at(r.t_enter), region, site);
  const bool has_comm = comm != OTF2_UNDEFINED_COMM;
  const uint32_t peer = comm_rank(r.comm, r.peer);
  const bool sends = has_comm && peer != OTF2_UNDEFINED_UINT32;
  const bool receives = has_comm && is_rank_of(r.comm, r.source);
  const auto sent = static_cast<uint64_t>(r.bytes_sent);
  const auto received = static_cast<uint64_t>(std::max<int64_t>(r.bytes_received, 0));
  switch (f.cls) {
  case fn_class::send:
    if (sends)
      out_.send(at(r.t_enter), peer, comm, static_cast<uint32_t>(r.tag), sent);
    break;
  case fn_class::isend:
    if (sends && r.request != 0) {
      out_.isend(at(r.t_enter), peer, comm, static_cast<uint32_t>(r.tag), sent, r.request);
      start(r.request);
    }
    break;
  case fn_class::irecv: // from MPI_PROC_NULL: no message, so no request records either
    if (has_comm && r.request != 0 && r.peer != STRATA_PROC_NULL_RANK) {
      out_.irecv_request(at(r.t_leave), r.request);
      start(r.request);
    }
    break;
  case fn_class::recv:
    if (receives)
      out_.recv(at(r.t_leave), static_cast<uint32_t>(r.source), comm,
                static_cast<uint32_t>(r.recv_tag), received);
    break;
  case fn_class::sendrecv:
    if (sends)
      out_.send(at(r.t_enter), peer, comm, static_cast<uint32_t>(r.tag), sent);
    if (receives)
      out_.recv(at(r.t_leave), static_cast<uint32_t>(r.source), comm,
                static_cast<uint32_t>(r.recv_tag), received);
    break;
  case fn_class::collective:
    if (has_comm) {
      out_.collective_begin(at(r.t_enter));
      out_.collective_end(at(r.t_leave), f.op, comm, comm_rank(r.comm, r.root),
                          static_cast<uint64_t>(std::max<int64_t>(r.bytes_sent, 0)), received);
    }
    break;
  case fn_class::one_sided: // to a world rank; none to MPI_PROC_NULL
    if (r.peer >= 0)
      write_one_sided(f, at(r.t_enter), static_cast<uint32_t>(r.peer), r);
    break;
  default:
    break;
  }
  pending_leave_ = true;
  pending_time_ = r.t_leave;
  pending_region_ = region;
}

void record_writer::write_one_sided(const fn_info& f, uint64_t t, uint32_t target,
                                    const record& r) {
  const auto sent = static_cast<uint64_t>(std::max<int64_t>(r.bytes_sent, 0));
  // A get's bytes are those it brings back (the call's expected bytes).
  const auto brought = static_cast<uint64_t>(std::max<int64_t>(r.bytes_received, 0));
  switch (f.rma) {
  case rma_kind::put:
    out_.rma_put(t, target, sent);
    break;
  case rma_kind::get:
    out_.rma_get(t, target, brought);
    break;
  case rma_kind::atomic:
    out_.rma_atomic(t, target, f.atomic, sent, 0);
    break;
  case rma_kind::none:
    break;
  }
}

void record_writer::finish() {
  flush_leave();
  // Regions still open (the program ended inside them, or their leave was not kept) close at the
  // last event, so the archive nests.
  while (!open_regions_.empty()) {
    out_.leave(last_time_, open_regions_.back());
    open_regions_.pop_back();
  }
}

void record_writer::write_all(const event_buffer& records, uint64_t window_begin,
                              rank_figures& figures) {
  bool first = true;
  records.for_each([&](const record& r) {
    if ((r.kind() == record_kind::mpi_call || r.kind() == record_kind::poll_run) &&
        r.t_enter < window_begin)
      return;
    const uint64_t before = out_.events();
    write(r);
    if (first && out_.events() > before) {
      figures.first = last_time_;
      first = false;
    }
  });
}

} // namespace strata::trace
