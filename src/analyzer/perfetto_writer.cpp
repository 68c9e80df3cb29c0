// perfetto_writer (perfetto_export.hpp): the events of one process's ranks and the analysis's
// graph as trace-event JSON, one event a line.
#include "analyzer/perfetto_export.hpp"

#include "analyzer/wait_states.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <iterator>
#include <string_view>
#include <vector>

namespace strata::analyze {
namespace {

// A string as a JSON string literal; bytes that are not UTF-8 become U+FFFD.
std::string json_string(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

struct message_arg {
  bool sent;
  uint32_t peer, comm, tag;
  uint64_t bytes;
};

struct collective_arg {
  bool present = false;
  uint32_t comm = 0, root = no_root;
  uint64_t sent = 0, received = 0;
};

// What the trace recorded inside one open operation. Frames are reused: their vectors keep
// their storage from one operation to the next.
struct frame {
  std::vector<message_arg> messages;
  collective_arg collective;
};

struct rank_frames {
  std::vector<frame> stack;
  size_t depth = 0;
};

// Seconds from the start of the trace in the trace's ticks, clamped to the uint64_t range.
uint64_t ticks_at(const definitions& defs, double seconds) {
  if (seconds <= 0)
    return defs.global_offset;
  // Rounded: seconds given to the microsecond are that many ticks, whatever their binary form.
  const double ticks = std::round(seconds * static_cast<double>(defs.timer_resolution));
  if (!std::isfinite(ticks) || ticks >= 1.8e19 - static_cast<double>(defs.global_offset))
    return UINT64_MAX;
  return defs.global_offset + static_cast<uint64_t>(ticks);
}

} // namespace

struct perfetto_writer::impl final : public event_handler, public graph_observer {
  const definitions& defs;
  uint32_t first_rank, last_rank;    // this process's ranks [first, last)
  uint32_t keep_first, keep_last;    // the selection's, inclusive
  uint64_t window_begin, window_end; // in ticks
  perfetto_stream& slices;
  perfetto_stream& links;
  uint64_t next_id, id_step;
  perfetto_counts counts;
  std::vector<rank_frames> ranks;
  std::vector<std::string> region_names, site_names, comm_names;
  std::vector<uint8_t> region_is_mpi;
  fmt::memory_buffer line;

  impl(const definitions& d, const perfetto_selection& sel, uint32_t first, uint32_t last,
       perfetto_stream& s, perfetto_stream& l, uint64_t id_offset, uint64_t step)
      : defs(d), first_rank(first), last_rank(last), keep_first(sel.first_rank),
        keep_last(sel.last_rank), window_begin(ticks_at(d, sel.from_s)),
        window_end(std::isinf(sel.to_s) ? UINT64_MAX : ticks_at(d, sel.to_s)), slices(s), links(l),
        next_id(id_offset + step), id_step(step), ranks(last - first) {
    for (const region_info& r : d.regions) {
      region_names.push_back(json_string(r.name));
      region_is_mpi.push_back(r.cat == category::mpi ? 1 : 0);
    }
    for (const call_site& c : d.call_sites)
      site_names.push_back(json_string(c.file + ":" + std::to_string(c.line)));
    for (const communicator& c : d.comms)
      comm_names.push_back(json_string(c.name));
  }

  [[nodiscard]] bool kept_rank(uint32_t rank) const {
    return rank >= keep_first && rank <= keep_last;
  }
  [[nodiscard]] bool kept(uint32_t rank, uint64_t enter, uint64_t leave) const {
    return kept_rank(rank) && leave >= window_begin && enter <= window_end;
  }

  // Microseconds from the start of the trace, to the nanosecond.
  void time(uint64_t t) {
    uint64_t ns = t > defs.global_offset ? t - defs.global_offset : 0;
    if (defs.timer_resolution != 1'000'000'000)
      ns = static_cast<uint64_t>(static_cast<unsigned __int128>(ns) * 1'000'000'000U /
                                 defs.timer_resolution);
    fmt::format_to(std::back_inserter(line), FMT_COMPILE("{}.{:03}"), ns / 1000, ns % 1000);
  }
  void duration(uint64_t enter, uint64_t leave) { time(defs.global_offset + (leave - enter)); }

  // The start of an event on rank `rank`'s one thread.
  void begin_event(char phase, uint32_t rank, uint64_t t) {
    line.clear();
    const uint64_t pid = uint64_t{rank} + 1;
    fmt::format_to(std::back_inserter(line),
                   FMT_COMPILE(",\n{{\"ph\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":"), phase, pid,
                   pid);
    time(t);
  }
  void put(std::string_view text) { line.append(text.data(), text.data() + text.size()); }

  frame* top(uint32_t rank) {
    rank_frames& f = ranks[rank - first_rank];
    return f.depth == 0 ? nullptr : &f.stack[f.depth - 1];
  }

  // event_handler: what each open operation recorded.
  void enter(uint32_t rank, uint64_t, uint32_t, uint32_t) override {
    rank_frames& f = ranks[rank - first_rank];
    if (f.depth == f.stack.size())
      f.stack.emplace_back();
    frame& fr = f.stack[f.depth++];
    fr.messages.clear();
    fr.collective = {};
  }
  void leave(uint32_t, uint64_t, uint32_t) override {} // on_operation ends the frame
  void message(uint32_t rank, bool sent, uint32_t peer, uint32_t comm, uint32_t tag,
               uint64_t bytes) {
    if (frame* fr = top(rank))
      fr->messages.push_back({sent, peer, comm, tag, bytes});
  }
  void send(uint32_t rank, uint64_t, uint32_t receiver, uint32_t comm, uint32_t tag,
            uint64_t bytes) override {
    message(rank, true, receiver, comm, tag, bytes);
  }
  void isend(uint32_t rank, uint64_t, uint32_t receiver, uint32_t comm, uint32_t tag,
             uint64_t bytes, uint64_t) override {
    message(rank, true, receiver, comm, tag, bytes);
  }
  void isend_complete(uint32_t, uint64_t, uint64_t) override {}
  void irecv_request(uint32_t, uint64_t, uint64_t) override {}
  void recv(uint32_t rank, uint64_t, uint32_t sender, uint32_t comm, uint32_t tag,
            uint64_t bytes) override {
    message(rank, false, sender, comm, tag, bytes);
  }
  void irecv(uint32_t rank, uint64_t, uint32_t sender, uint32_t comm, uint32_t tag, uint64_t bytes,
             uint64_t) override {
    message(rank, false, sender, comm, tag, bytes);
  }
  void request_cancelled(uint32_t, uint64_t, uint64_t) override {}
  void collective_end(uint32_t rank, uint64_t, uint32_t, uint32_t comm, uint32_t root,
                      uint64_t sent, uint64_t received) override {
    if (frame* fr = top(rank))
      fr->collective = {true, comm, root, sent, received};
  }

  void message_list(const frame& fr, bool sent) {
    bool first = true;
    for (const message_arg& m : fr.messages) {
      if (m.sent != sent)
        continue;
      put(first ? (sent ? ",\"sent\":[" : ",\"received\":[") : ",");
      first = false;
      fmt::format_to(std::back_inserter(line),
                     FMT_COMPILE("{{\"{}\":{},\"tag\":{},\"bytes\":{},\"comm\":"),
                     sent ? "to" : "from", m.peer, m.tag, m.bytes);
      put(comm_names[m.comm]);
      put("}");
    }
    if (!first)
      put("]");
  }

  // graph_observer: an operation ends (before any of its edges and waits).
  void on_operation(const operation& op) override {
    rank_frames& f = ranks[op.rank - first_rank];
    const frame* fr = f.depth > 0 ? &f.stack[f.depth - 1] : nullptr;
    if (f.depth > 0)
      --f.depth;
    if (!kept(op.rank, op.enter, op.leave))
      return;
    begin_event('X', op.rank, op.enter);
    put(",\"dur\":");
    duration(op.enter, op.leave);
    put(",\"name\":");
    put(region_names[op.region]);
    put(region_is_mpi[op.region] ? ",\"cat\":\"mpi\",\"args\":{\"site\":"
                                 : ",\"cat\":\"user\",\"args\":{\"site\":");
    put(op.site < site_names.size() ? std::string_view(site_names[op.site])
                                    : std::string_view("null"));
    if (fr != nullptr) {
      message_list(*fr, true);
      message_list(*fr, false);
      if (fr->collective.present) {
        put(",\"comm\":");
        put(comm_names[fr->collective.comm]);
        if (fr->collective.root != no_root)
          fmt::format_to(std::back_inserter(line), FMT_COMPILE(",\"root\":{}"),
                         fr->collective.root);
        fmt::format_to(std::back_inserter(line),
                       FMT_COMPILE(",\"bytes_sent\":{},\"bytes_received\":{}"), fr->collective.sent,
                       fr->collective.received);
      }
    }
    put("}}");
    slices.append(line.data(), line.size());
    ++counts.slices;
  }

  void on_partner(const partner_edge& e) override {
    const uint32_t from = rank_of(e.send_op), to = rank_of(e.receive_op);
    if (!kept(from, e.send_enter, e.send_leave) || !kept(to, e.receive_enter, e.receive_leave))
      return;
    const uint64_t id = next_id;
    next_id += id_step;
    begin_event('s', from, e.send_enter);
    fmt::format_to(std::back_inserter(line),
                   FMT_COMPILE(",\"id\":{},\"name\":\"message\",\"cat\":\"message\"}}"), id);
    links.append(line.data(), line.size());
    begin_event('f', to, e.receive_enter);
    fmt::format_to(
        std::back_inserter(line),
        FMT_COMPILE(",\"bp\":\"e\",\"id\":{},\"name\":\"message\",\"cat\":\"message\"}}"), id);
    links.append(line.data(), line.size());
    ++counts.flows;
  }

  void on_collective(const std::vector<uint64_t>&) override {}

  void on_wait(const operation_wait& w) override {
    const uint32_t rank = rank_of(w.op);
    if (w.ticks == 0 || w.pattern >= pattern_count || !kept(rank, w.enter, w.leave))
      return;
    begin_event('X', rank, w.enter);
    put(",\"dur\":");
    duration(w.enter, w.enter + w.ticks);
    fmt::format_to(std::back_inserter(line),
                   FMT_COMPILE(",\"name\":\"{}\",\"cat\":\"wait_state\"}}"),
                   pattern_names[w.pattern]);
    links.append(line.data(), line.size());
    ++counts.waits;
  }
};

perfetto_writer::perfetto_writer(const definitions& defs, const perfetto_selection& selection,
                                 uint32_t first_rank, uint32_t last_rank, perfetto_stream& slices,
                                 perfetto_stream& links, uint64_t id_offset, uint64_t id_step)
    : impl_(std::make_unique<impl>(defs, selection, first_rank, last_rank, slices, links, id_offset,
                                   id_step)) {}
perfetto_writer::~perfetto_writer() = default;

event_handler& perfetto_writer::events() {
  return *impl_;
}
graph_observer& perfetto_writer::observer() {
  return *impl_;
}

perfetto_counts perfetto_writer::finish() {
  impl_->slices.flush();
  impl_->links.flush();
  return impl_->counts;
}

} // namespace strata::analyze
