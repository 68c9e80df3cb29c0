// The monitor module's tool ranks: each runs one node of the tree (src/monitor/engine.hpp),
// receiving its children's packets and sending what its filter reduced to its parent, the root
// writing the front end's lines, until the root says the application has finalized.
#include "monitor/module/state.hpp"

#include "monitor/frontend.hpp"
#include "monitor/profile_round.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace strata::monitor {
namespace {

// ---- the tool ranks --------------------------------------------------------------------------

// A tool rank never returns to the application: the core finalizes MPI without the other
// modules' finalize callbacks (they never saw it return from MPI_Init) and ends the process.
[[noreturn]] void finalize_tool_rank() {
  g_state->host->end_process(g_state->self, 0);
  std::_Exit(0); // end_process does not return
}

struct pending_send {
  std::string bytes;
  MPI_Request request = MPI_REQUEST_NULL;
};

} // namespace

[[noreturn]] void run_tool_rank(monitor_state& s, const overlay::tree_layout& tree, int node) {
  const int P = tree.leaves;
  const std::vector<int> children = tree.children(node);
  const bool leaf_children = tree.children_are_leaves(node);
  const bool root = node == 0;
  const int parent = root ? -1 : P + tree.parent_of_node(node);
  auto world_of_child = [&](size_t i) { return leaf_children ? children[i] : P + children[i]; };
  overlay::node_engine engine(*s.filter, static_cast<int>(children.size()), leaf_children, root);
  std::FILE* out = nullptr;
  if (root) {
    out = std::fopen(s.opt.out.c_str(), "w");
    if (out == nullptr)
      log_line(s, s.opt.out + ": cannot write the monitor's rounds (" + std::strerror(errno) +
                      "); they are reduced but not kept");
  }
  std::vector<std::unique_ptr<pending_send>> sends;
  auto send = [&](int dest, const overlay::packet& p) {
    auto ps = std::make_unique<pending_send>();
    ps->bytes = overlay::encode_packet(p);
    MPI_Isend(ps->bytes.data(), static_cast<int>(ps->bytes.size()), MPI_BYTE, dest, overlay_tag,
              s.overlay, &ps->request);
    sends.push_back(std::move(ps));
  };
  auto reap = [&] {
    std::erase_if(sends, [](std::unique_ptr<pending_send>& ps) {
      int done = 0;
      MPI_Test(&ps->request, &done, MPI_STATUS_IGNORE);
      return done != 0;
    });
  };
  auto send_fini_down = [&] {
    if (!leaf_children)
      for (size_t i = 0; i < children.size(); ++i)
        send(world_of_child(i), overlay::packet{overlay::packet_kind::fini, 0, 0, {}});
  };
  hang_node hang(s, tree, node);
  const hang_node::send_fn send_hang = [&](int dest, const overlay::packet& p) { send(dest, p); };
  std::vector<overlay::node_output> outputs;
  std::string buffer;
  const double loop_cpu0 = cpu_seconds();
  const uint64_t loop_wall0 = mono_ns();
  // Idle back-off: each wakeup costs the tool rank about 25 us here (the probe, Open MPI's
  // sched_yield when oversubscribed, two context switches). A 5 ms cap halves that cost, but
  // a burst of rounds (strata_monitor_dump() in a loop) then overruns the offload buffers and
  // rounds are dropped under the default policy; 2 ms does not. Periodic rounds come no faster
  // than the period, so a sleep of up to half of it still takes each round before the next:
  // with a period the cap follows it, from 2 to 5 ms.
  constexpr long backoff_first_us = 10;
  constexpr long backoff_growth = 2;
  const long backoff_cap_us =
      s.period_ns > 0 ? std::clamp(static_cast<long>(s.period_ns / 2000), 2000L, 5000L) : 2000L;
  long backoff_us = backoff_first_us;
  bool fini = false;
  while (!fini) {
    int flag = 0;
    MPI_Status status;
    hang.poll(send_hang);
    MPI_Iprobe(MPI_ANY_SOURCE, overlay_tag, s.overlay, &flag, &status);
    if (flag == 0) {
      reap();
      sleep_us(backoff_us); // no busy spin: the application may share these cores
      backoff_us = std::min(backoff_us * backoff_growth, backoff_cap_us);
      continue;
    }
    backoff_us = backoff_first_us;
    if (s.opt.node_delay_s > 0) // a slow overlay, on purpose (tests, benchmarks)
      sleep_us(static_cast<long>(s.opt.node_delay_s * 1e6));
    int size = 0;
    MPI_Get_count(&status, MPI_BYTE, &size);
    buffer.resize(static_cast<size_t>(size));
    MPI_Recv(buffer.data(), size, MPI_BYTE, status.MPI_SOURCE, overlay_tag, s.overlay,
             MPI_STATUS_IGNORE);
    outputs.clear();
    try {
      overlay::packet p = overlay::decode_packet(buffer);
      const auto from_child = std::find_if(children.begin(), children.end(), [&](int c) {
        return (leaf_children ? c : P + c) == status.MPI_SOURCE;
      });
      const int child =
          from_child != children.end() ? static_cast<int>(from_child - children.begin()) : -1;
      std::string problem;
      if (hang.on_packet(p, status.MPI_SOURCE == parent ? parent : -1, leaf_children ? -1 : child,
                         send_hang, problem)) {
        if (!problem.empty())
          log_line(s, "overlay node " + std::to_string(node) + ": " + problem);
      } else if (status.MPI_SOURCE == parent) {
        if (p.kind == overlay::packet_kind::fini) {
          send_fini_down();
          fini = true;
        } else {
          engine.on_parent(p, outputs);
        }
      } else if (child >= 0) {
        engine.on_child(child, std::move(p), outputs);
      }
    } catch (const std::exception& e) {
      log_line(s, "overlay node " + std::to_string(node) + ": bad packet from rank " +
                      std::to_string(status.MPI_SOURCE) + ": " + e.what());
    }
    for (overlay::node_output& o : outputs) {
      switch (o.to) {
      case overlay::node_output::target::parent:
        send(parent, o.p);
        break;
      case overlay::node_output::target::child:
        send(world_of_child(static_cast<size_t>(o.child)), o.p);
        break;
      case overlay::node_output::target::front:
        if (out != nullptr) {
          const double t = static_cast<double>(mono_ns() - s.start_ns) / 1e9;
          std::string line = overlay::round_json_line(o.result, s.filter->name(), t);
          if (o.result.round == overlay::final_round && line.ends_with("}")) {
            // What the front end's own loop cost: it sleeps while idle, so CPU << wall.
            char extra[128];
            std::snprintf(extra, sizeof(extra), ",\"root_cpu_s\":%.6f,\"root_wall_s\":%.6f}",
                          cpu_seconds() - loop_cpu0,
                          static_cast<double>(mono_ns() - loop_wall0) / 1e9);
            line.pop_back();
            line += extra;
          }
          std::fprintf(out, "%s\n", line.c_str());
          std::fflush(out); // live: a reader follows the file
        }
        break;
      }
    }
    if (root && engine.done()) {
      send_fini_down();
      fini = true;
    }
  }
  while (!sends.empty()) {
    reap();
    if (!sends.empty())
      sleep_us(100);
  }
  if (out != nullptr)
    std::fclose(out);
  hang.close();
  finalize_tool_rank();
}

} // namespace strata::monitor
