// What the core's files share: the loaded modules, the core's state and its life-cycle flags.
// Not a module's business (modules see include/strata/module.h only).
#pragma once

#include "config/config.hpp"
#include "config/options.hpp"
#include "core/dispatch.hpp"

#include <mpi.h>

#include <atomic>
#include <link.h>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace strata::gen {
bool takes_communicator(int fid);
bool is_poll_function(int fid);
// The STRATA_FIELD_* groups that decoding the function's STRATA_FIELD_BYTES reads.
uint32_t bytes_prerequisites(int fid);
// The function makes a request (MPI_Isend, MPI_Irecv, MPI_Ibcast, ...): its exit decoder notes
// the request's kind under STRATA_FIELD_RECEIVED (core/completions.hpp).
bool makes_request(int fid);
// The function completes requests and reads the bytes received of their statuses.
bool completes_requests(int fid);
} // namespace strata::gen

namespace strata::core {

// Internal linkage is by hidden visibility: strata_core_probe reuses these.
inline namespace internal {

struct loaded_module {
  std::string name;
  std::string origin; // where the stack names it ("FILE:LINE", "--tools", ...), for messages
  std::string path;
  void* handle = nullptr;
  const strata_module* desc = nullptr;
  void* state = nullptr;
  std::vector<bool> subscribed; // by function id
  std::vector<void*> wrappers;  // by function id: the module's own MPI_X, or null
  uint32_t poll_interval = 0;   // strata_module_polls_v1: time one poll in this many
  strata_event_fn untimed_poll = nullptr;
  strata_module_counter_entry counter = nullptr;           // strata_module_counter_v1, if it has it
  strata_module_timed_counts_entry timed_counts = nullptr; // strata_module_timed_counts_v1
  uint32_t fields = STRATA_FIELD_ALL; // strata_module_fields_v1: the event fields it reads
  // strata_module_function_fields_v1, by function id, if it has it: those of each function
  std::vector<uint32_t> function_fields;
  bool own_calls_seen = false; // strata_module_own_calls_seen_v1: its calls go to the layers below
  bool takes_ranks = false;    // strata_module_takes_ranks_v1 said yes for its arguments
  std::vector<config::option_decl> options; // strata_module_options_v1, if it declares them
};

struct service {
  std::string signature;
  void* value;
};

// Everything the core owns. Built in MPI_Init (before the real one), never freed: modules and
// chains must stay valid for MPI calls made from atexit handlers and other threads.
struct core_state {
  std::vector<loaded_module> modules;
  std::vector<std::vector<chain_entry>> entries;            // by function id
  std::vector<std::vector<const chain_entry*>> first_below; // by function id
  std::vector<chain> chain_storage;                         // by function id
  std::string load_error;
  std::mutex registry_lock; // services and values: set-up time only, never on the call path
  std::map<std::string, service> services;
  std::map<std::string, std::unique_ptr<std::string>> values;
  std::vector<std::unique_ptr<std::string>> retired_values;
  bool loading = false;
  bool in_mpi_ready = false;
  std::vector<const chain_entry*> empty_first_below; // a chain only remapped, never wrapped
  chain empty_chain;
};

core_state& state();

extern std::atomic<bool> g_loaded;

void report_line(const std::string& line);
std::string own_directory();
link_map* own_link_map();

extern const strata_host host_api;

// The layer a module's own calls start from: its own (the layers below it see them) when it
// asked for that, else the last one (straight to MPI, seen by no layer).
inline int own_calls_layer(const core_state& s, size_t module) {
  return s.modules[module].own_calls_seen ? static_cast<int>(module)
                                          : static_cast<int>(s.modules.size()) - 1;
}

// Runs `fn` for each module, in stack order, with the thread's layer set for its own calls.
template <typename Fn> void for_each_module(Fn fn) {
  core_state& s = state();
  const int saved = tls.layer;
  for (size_t i = 0; i < s.modules.size(); ++i) {
    tls.layer = own_calls_layer(s, i);
    fn(s.modules[i]);
  }
  tls.layer = saved;
}

// Loading (loading.cpp).
std::string load_module(const config::module_spec& spec, const std::vector<std::string>& dirs,
                        loaded_module& m);
void find_wrappers(loaded_module& m);
void ask_poll_sampling(loaded_module& m);
void find_counter_entry(loaded_module& m);
void ask_takes_ranks(loaded_module& m, const config::module_spec& spec);
// The module's declared options resolved into spec.args (argument, environment, default), or
// the one-line error. A module that declares none keeps its arguments as given.
std::string resolve_module_options(loaded_module& m, config::module_spec& spec);
void build_chains(core_state& s);
// Returns the lines to report about modules that answered a question incompletely (one per
// module, the same on every rank).
std::vector<std::string> enable_counting(core_state& s);
// Every function taking a communicator gets a chain (an empty one if no module wraps it), so
// that the application's calls pass through dispatch<>(), which substitutes the communicator.
void chain_every_communicator_function(core_state& s);

// The life cycle (lifecycle.cpp): the tool world and whether MPI may be called by the tools.
const void* host_world();
int host_replace_world(int self, const void* comm);
[[noreturn]] void host_end_process(int self, int status);
bool mpi_active();

} // namespace internal
} // namespace strata::core
