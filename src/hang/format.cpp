// The diagnosis as text for people (each finding with what to do) and as JSON for tools
// (strata.hang/1, docs/hang.md).
#include "hang/diagnose.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>

namespace strata::hang {
namespace {

std::string seconds(uint64_t ns) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.1f s", static_cast<double>(ns) / 1e9);
  return text;
}

std::string ranks_text(const std::vector<int32_t>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + rank_ranges(ranks);
}

std::string site(const std::string& file, uint32_t line, const std::string& function) {
  std::string text = file.empty() ? "(call site unknown)" : file + ":" + std::to_string(line);
  if (!function.empty())
    text += " (" + function + ")";
  return text;
}

std::string call(const waiting_rank& w) {
  return "rank " + std::to_string(w.rank) +
         (w.thread != 0 ? " (thread " + std::to_string(w.thread) + ")" : "") + " in " + w.routine +
         " at " + site(w.file, w.line, w.function);
}

std::string comm_text(const communicator& c) {
  if (c.size == 0)
    return "";
  char id[40];
  std::snprintf(id, sizeof(id), "%llx", static_cast<unsigned long long>(c.id));
  return ", communicator " + std::string(id) + " of " + std::to_string(c.size) + " ranks";
}

const char* reason_text(unmatched_receive::why why) {
  switch (why) {
  case unmatched_receive::why::wrong_tag:
    return "wrong tag";
  case unmatched_receive::why::wrong_source:
    return "wrong source";
  case unmatched_receive::why::wrong_communicator:
    return "wrong communicator";
  case unmatched_receive::why::nothing_matches:
    break;
  }
  return "nothing matches";
}

const char* verdict_name(verdict v) {
  switch (v) {
  case verdict::no_states:
    return "no_states";
  case verdict::progressing:
    return "progressing";
  case verdict::all_computing:
    return "all_computing";
  case verdict::all_finished:
    return "all_finished";
  case verdict::hang:
    break;
  }
  return "hang";
}

const char* phase_name(thread_phase p) {
  switch (p) {
  case thread_phase::unused:
    return "unused";
  case thread_phase::not_started:
    return "not_started";
  case thread_phase::in_mpi:
    return "in_mpi";
  case thread_phase::outside_mpi:
    return "outside_mpi";
  case thread_phase::finalized:
    break;
  }
  return "finalized";
}

void text_classes(std::string& out, const std::vector<rank_class>& classes) {
  out += "\nWhere the ranks are (classes):\n";
  for (const rank_class& c : classes) {
    std::string what;
    if (c.phase == thread_phase::in_mpi)
      what = "in " + c.routine + " at " + site(c.file, c.line, c.function) + comm_text(c.comm);
    else if (c.phase == thread_phase::outside_mpi)
      what = "computing, last MPI call " + c.routine + " at " + site(c.file, c.line, c.function);
    else
      what = std::string(c.phase == thread_phase::finalized ? "finalized"
                                                            : "before its first MPI call");
    out += "  " + ranks_text(c.ranks) + " (" + std::to_string(c.ranks.size()) + "): " + what;
    if (c.longest_ns > 0 && c.phase != thread_phase::finalized)
      out += ", for up to " + seconds(c.longest_ns);
    out += "\n";
  }
}

constexpr size_t shown_members = 8;

// Ranks with threads the states do not describe, grouped by how many.
void text_threads_not_described(std::string& out,
                                const std::vector<std::pair<int32_t, uint32_t>>& ranks) {
  std::map<uint32_t, std::vector<int32_t>> by_count;
  for (const auto& [rank, count] : ranks)
    by_count[count].push_back(rank);
  for (const auto& [count, with_count] : by_count)
    out += "Not described: " + std::to_string(count) + (count == 1 ? " thread" : " threads") +
           " of " + ranks_text(with_count) +
           " (more threads than the state keeps): their calls and requests are unknown, and "
           "may be what the others wait for.\n";
}

} // namespace

std::string format_text(const diagnosis& d) {
  std::string out;
  switch (d.result) {
  case verdict::no_states:
    return "No hang state files to judge.\n";
  case verdict::progressing:
    out = "No hang: the job made progress (" + d.progress_note + ").\n";
    break;
  case verdict::all_computing:
    out = "No hang: no rank waits inside MPI; the ranks compute.\n";
    break;
  case verdict::all_finished:
    out = "No hang: every rank has finalized MPI.\n";
    break;
  case verdict::hang:
    out = "HANG: no rank of " + std::to_string(d.world_size) +
          " completed an MPI call in the last " + seconds(d.threshold_ns) + ".\n";
    break;
  }
  if (d.tree_tool_ranks > 0) {
    char figures[96];
    std::snprintf(figures, sizeof figures, "%llu bytes at its root, %.1f ms there",
                  static_cast<unsigned long long>(d.tree_root_bytes),
                  static_cast<double>(d.tree_merge_ns) / 1e6);
    out += "Merged through " + std::to_string(d.tree_tool_ranks) + " tool rank" +
           (d.tree_tool_ranks == 1 ? "" : "s") + " of the monitor's tree (" + figures + ").\n";
    constexpr size_t shown = 5;
    for (size_t i = 0; i < d.tree_unread.size() && i < shown; ++i)
      out += "Not read by the tree: rank " + std::to_string(d.tree_unread[i].first) + " (" +
             d.tree_unread[i].second + ").\n";
    if (d.tree_unread.size() > shown)
      out += "Not read by the tree: " + std::to_string(d.tree_unread.size() - shown) +
             " more ranks.\n";
  }
  if (!d.missing_ranks.empty())
    out += "No state for " + ranks_text(d.missing_ranks) +
           " (not started, or their state files are missing).\n";
  if (!d.torn_ranks.empty())
    out += "The state of " + ranks_text(d.torn_ranks) +
           " was being rewritten on every read (its writer may have died mid-update).\n";
  text_threads_not_described(out, d.threads_not_described);
  for (const unmatched_receive& u : d.unmatched) {
    out += std::string("\nUNMATCHED RECEIVE (") + reason_text(u.reason) + "): " + call(u.receiver) +
           "\n    waits for " + u.receiver.waits_for + "\n";
    for (const auto& s : u.sends)
      out += "    rank " + std::to_string(s.sender) + " sends to it with " +
             (s.tag == any_tag ? std::string("any tag") : "tag " + std::to_string(s.tag)) +
             (s.pending ? " (an MPI_Isend not yet completed)"
                        : " (in " + s.routine + " at " + site(s.file, s.line, "") + ")") +
             "\n";
    if (u.sends.empty())
      out += "    no rank has a send to it pending or in progress\n";
    out += u.reason == unmatched_receive::why::nothing_matches
               ? "  Act: check which rank was meant to send this message; every other rank "
                 "waits elsewhere.\n"
               : "  Act: make the tag, source and communicator of the send and the receive "
                 "agree.\n";
  }
  for (const deadlock& dl : d.deadlocks) {
    std::vector<int32_t> members;
    for (const waiting_rank& w : dl.cycle)
      members.push_back(w.rank);
    const bool one_rank =
        std::all_of(members.begin(), members.end(), [&](int32_t m) { return m == members[0]; });
    const bool threads = std::any_of(dl.cycle.begin(), dl.cycle.end(),
                                     [](const waiting_rank& w) { return w.thread != 0; });
    if (members.size() == 1)
      out += "\nDEADLOCK: " + ranks_text(members) + " waits for itself:\n";
    else if (one_rank)
      out += "\nDEADLOCK: the threads of rank " + std::to_string(members[0]) +
             " wait for each other in a cycle:\n";
    else
      out += "\nDEADLOCK: " + std::string(threads ? "threads of " : "") + ranks_text(members) +
             " wait for each other in a cycle:\n";
    for (size_t i = 0; i < dl.cycle.size() && i < shown_members; ++i)
      out += "  " + call(dl.cycle[i]) + "\n    waits for " + dl.cycle[i].waits_for + "\n";
    if (dl.cycle.size() > shown_members)
      out += "  ... and " + std::to_string(dl.cycle.size() - shown_members) +
             " more (see the classes below)\n";
    if (!dl.blocked_behind.empty())
      out += "  Also blocked behind it: " + ranks_text(dl.blocked_behind) + "\n";
    const bool collective =
        std::any_of(dl.cycle.begin(), dl.cycle.end(), [](const waiting_rank& w) {
          return w.waits_for.find(" to enter ") != std::string::npos;
        });
    out += collective ? "  Act: every rank of a communicator must call the same collectives in the "
                        "same order; find the branch where these ranks part.\n"
                      : "  Act: change the order of these calls so that one side sends first, or "
                        "use MPI_Sendrecv or nonblocking calls.\n";
    if (!d.unmatched.empty())
      out += "  (A receive above matches no send: that is the likely cause.)\n";
  }
  for (const computing_rank& c : d.computing) {
    out += "\n";
    if (!c.has_state)
      out += "WAITING FOR A RANK WITHOUT STATE: rank " + std::to_string(c.rank) +
             " (it may have died or never started)\n";
    else if (c.threads_not_described > 0)
      out += "WAITING FOR A RANK WITH THREADS NOT DESCRIBED: rank " + std::to_string(c.rank) +
             " has " + std::to_string(c.threads_not_described) +
             (c.threads_not_described == 1 ? " thread" : " threads") +
             " that called MPI and that its state does not describe (they may compute or send); "
             "its described threads wait inside MPI, e.g. in " +
             c.last_routine + " at " + site(c.file, c.line, c.function) + "\n";
    else if (c.finalized)
      out += "WAITING FOR A FINALIZED RANK: rank " + std::to_string(c.rank) +
             " called MPI_Finalize " + seconds(c.computing_ns) + " ago at " +
             site(c.file, c.line, c.function) + "\n";
    else
      out += "WAITING FOR A COMPUTING RANK: rank " + std::to_string(c.rank) +
             " has been outside MPI for " + seconds(c.computing_ns) +
             (c.last_routine.empty()
                  ? std::string(", before its first MPI call")
                  : ", since " + c.last_routine + " at " + site(c.file, c.line, c.function)) +
             "\n";
    out += "  Waiting for it directly: " + ranks_text(c.waiting_directly) + "\n";
    if (!c.waiting_indirectly.empty())
      out += "  Waiting through them: " + ranks_text(c.waiting_indirectly) + "\n";
    if (c.chain.size() > 1) {
      out += "  Chain:\n";
      for (size_t i = 0; i < c.chain.size() && i < shown_members; ++i)
        out += "    " + call(c.chain[i]) + "\n      waits for " + c.chain[i].waits_for + "\n";
    } else if (c.chain.size() == 1) {
      out += "  e.g. " + call(c.chain[0]) + "\n    waits for " + c.chain[0].waits_for + "\n";
    }
    if (c.threads_not_described > 0)
      out += "  Act: look at every thread of rank " + std::to_string(c.rank) +
             " (a debugger's backtrace of each): whether one of them computes, or waits too.\n";
    else
      out += c.has_state && !c.finalized
                 ? "  Act: if this computation should have ended, look at rank " +
                       std::to_string(c.rank) +
                       " after its last call (a loop that does not end, a branch that skips a "
                       "call the others make).\n"
                 : "  Act: find out why this rank stopped (its output, the batch system's log).\n";
  }
  for (const rank_class& c : d.stuck_complete_collectives)
    out += "\nINSIDE A COMPLETE COLLECTIVE: " + ranks_text(c.ranks) + " are all in " + c.routine +
           " at " + site(c.file, c.line, c.function) + comm_text(c.comm) +
           "\n  Every member entered it; a collective that does not complete points to the MPI "
           "library or the network.\n";
  if (d.result == verdict::hang && d.deadlocks.empty() && d.computing.empty() &&
      d.unmatched.empty() && d.stuck_complete_collectives.empty())
    out += d.threads_not_described.empty()
               ? "\nNo cause found in the states: the ranks wait in calls whose peers the states "
                 "do not name (see the classes).\n"
               : "\nNo cause found in the states: the ranks wait in calls whose peers the states "
                 "do not name, or for threads they do not describe (above; see the classes).\n";
  if (!d.classes.empty())
    text_classes(out, d.classes);
  return out;
}

std::string format_json(const diagnosis& d) {
  using nlohmann::json;
  auto waiting_json = [](const waiting_rank& w) {
    json out{{"rank", w.rank},      {"routine", w.routine},   {"file", w.file},
             {"line", w.line},      {"function", w.function}, {"waits_for", w.waits_for},
             {"targets", w.targets}};
    if (w.thread != 0)
      out["thread"] = w.thread;
    // A wildcard receive waits for any member of a communicator but itself: the communicator,
    // whose members are first + i * stride (a list of them each would be N² at N such ranks).
    if (!w.any_of.empty()) {
      json any = json::array();
      for (const communicator& c : w.any_of)
        any.push_back({{"communicator", c.id},
                       {"communicator_size", c.size},
                       {"first", c.first},
                       {"stride", c.stride}});
      out["any_of"] = any;
    }
    return out;
  };
  json j{{"format", "strata.hang/1"},
         {"verdict", verdict_name(d.result)},
         {"now_ns", d.now_ns},
         {"threshold_s", static_cast<double>(d.threshold_ns) / 1e9},
         {"world_size", d.world_size},
         {"missing_ranks", rank_ranges(d.missing_ranks)},
         {"torn_ranks", rank_ranges(d.torn_ranks)},
         {"note", d.progress_note}};
  json deadlocks = json::array();
  for (const deadlock& dl : d.deadlocks) {
    json cycle = json::array();
    for (const waiting_rank& w : dl.cycle)
      cycle.push_back(waiting_json(w));
    deadlocks.push_back({{"cycle", cycle}, {"blocked_behind", rank_ranges(dl.blocked_behind)}});
  }
  j["deadlocks"] = deadlocks;
  json not_described = json::array();
  for (const auto& [rank, count] : d.threads_not_described)
    not_described.push_back({{"rank", rank}, {"threads", count}});
  j["threads_not_described"] = not_described;
  json unmatched = json::array();
  for (const unmatched_receive& u : d.unmatched) {
    json sends = json::array();
    for (const auto& s : u.sends)
      sends.push_back({{"sender", s.sender},
                       {"tag", s.tag},
                       {"communicator", s.comm},
                       {"pending", s.pending},
                       {"routine", s.routine},
                       {"file", s.file},
                       {"line", s.line}});
    unmatched.push_back({{"reason", reason_text(u.reason)},
                         {"receiver", waiting_json(u.receiver)},
                         {"source", u.source == any_source ? json("any") : json(u.source)},
                         {"tag", u.tag == any_tag ? json("any") : json(u.tag)},
                         {"sends", sends}});
  }
  j["unmatched_receives"] = unmatched;
  json computing = json::array();
  for (const computing_rank& c : d.computing) {
    json chain = json::array();
    for (const waiting_rank& w : c.chain)
      chain.push_back(waiting_json(w));
    computing.push_back({{"rank", c.rank},
                         {"state", !c.has_state                  ? "missing"
                                   : c.finalized                 ? "finalized"
                                   : c.threads_not_described > 0 ? "not_described"
                                                                 : "computing"},
                         {"last_routine", c.last_routine},
                         {"file", c.file},
                         {"line", c.line},
                         {"function", c.function},
                         {"computing_s", static_cast<double>(c.computing_ns) / 1e9},
                         {"waiting_directly", rank_ranges(c.waiting_directly)},
                         {"waiting_indirectly", rank_ranges(c.waiting_indirectly)},
                         {"chain", chain}});
  }
  j["waiting_for"] = computing;
  auto class_json = [](const rank_class& c) {
    return json{{"ranks", rank_ranges(c.ranks)},
                {"count", c.ranks.size()},
                {"phase", phase_name(c.phase)},
                {"routine", c.routine},
                {"file", c.file},
                {"line", c.line},
                {"function", c.function},
                {"communicator", c.comm.id},
                {"communicator_size", c.comm.size},
                {"longest_s", static_cast<double>(c.longest_ns) / 1e9}};
  };
  json complete = json::array();
  for (const rank_class& c : d.stuck_complete_collectives)
    complete.push_back(class_json(c));
  j["complete_collectives"] = complete;
  json classes = json::array();
  for (const rank_class& c : d.classes)
    classes.push_back(class_json(c));
  j["classes"] = classes;
  // Names come from the ranks' files: bytes that are not UTF-8 are shown replaced, not refused.
  if (d.tree_tool_ranks > 0) {
    json unread = json::array();
    for (const auto& [rank, why] : d.tree_unread)
      unread.push_back({{"rank", rank}, {"why", why}});
    j["merged_through"] = {{"tool_ranks", d.tree_tool_ranks},
                           {"root_bytes", d.tree_root_bytes},
                           {"root_s", static_cast<double>(d.tree_merge_ns) / 1e9},
                           {"unread", unread}};
  }
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

} // namespace strata::hang
