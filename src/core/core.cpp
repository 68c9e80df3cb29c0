// Module loading, chain building, the host API offered to modules and the MPI life-cycle hooks.
#include "config/config.hpp"
#include "core/dispatch.hpp"
#include "core/regions.hpp"
#include "launch/launch.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <fnmatch.h>
#include <link.h>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unistd.h>
#include <vector>

namespace strata::gen {
void resolve_real_functions();
void* real_function(int fid);
bool takes_communicator(int fid);
bool is_poll_function(int fid);
} // namespace strata::gen

namespace strata::core {

__thread thread_state tls __attribute__((tls_model("initial-exec"))) = {-1, 0, nullptr, 1, 0};
const chain* chains[gen::function_count];
bool world_replaced = false;
MPI_Comm world_replacement = MPI_COMM_WORLD;

// Internal linkage is by hidden visibility: strata_core_probe below reuses these.
inline namespace internal {

struct loaded_module {
  std::string name;
  std::string path;
  void* handle = nullptr;
  const strata_module* desc = nullptr;
  void* state = nullptr;
  std::vector<bool> subscribed; // by function id
  std::vector<void*> wrappers;  // by function id: the module's own MPI_X, or null
  uint32_t poll_interval = 0;   // strata_module_polls_v1: time one poll in this many
  strata_event_fn untimed_poll = nullptr;
  strata_module_counter_entry counter = nullptr; // strata_module_counter_v1, if it has it
};

struct service {
  std::string signature;
  void* value;
};

// Everything the core owns. Built in MPI_Init (before the real one), never freed: modules and
// chains must stay valid for MPI calls made from atexit handlers and other threads.
struct core_state {
  std::vector<loaded_module> modules;
  std::vector<std::vector<chain_entry>> entries; // by function id
  std::vector<std::vector<uint16_t>> starts;     // by function id
  std::vector<chain> chain_storage;              // by function id
  std::string load_error;
  std::mutex registry_lock; // services and values: set-up time only, never on the call path
  std::map<std::string, service> services;
  std::map<std::string, std::unique_ptr<std::string>> values;
  std::vector<std::unique_ptr<std::string>> retired_values;
  bool loading = false;
  bool in_mpi_ready = false;
  std::vector<uint16_t> empty_starts; // the chain of functions only remapped, never wrapped
  chain empty_chain;
};

core_state& state() {
  static core_state* s = new core_state(); // never destroyed: see core_state
  return *s;
}

std::atomic<bool> g_loaded{false};
std::atomic<bool> g_ready{false};
std::atomic<bool> g_finalizing{false};
std::atomic<bool> g_finalized{false};

void report_line(const std::string& line) {
  std::string text = "strata: " + line + "\n";
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
}

std::string own_directory() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&own_directory), &info) == 0 || info.dli_fname == nullptr)
    return {};
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

link_map* own_link_map() {
  Dl_info info{};
  link_map* map = nullptr;
  ::dladdr1(reinterpret_cast<void*>(&own_directory), &info, reinterpret_cast<void**>(&map),
            RTLD_DL_LINKMAP);
  return map;
}

// ---- the host API -------------------------------------------------------------------------

int host_function_count() {
  return gen::function_count;
}

const char* host_function_name(int fid) {
  return fid >= 0 && fid < gen::function_count ? gen::function_names[fid] : nullptr;
}

int host_function_id(const char* name) {
  if (name == nullptr)
    return -1;
  for (int fid = 0; fid < gen::function_count; ++fid)
    if (std::strcmp(gen::function_names[fid], name) == 0)
      return fid;
  return -1;
}

int host_subscribe(int self, const char* glob) {
  core_state& s = state();
  if (!s.loading || self < 0 || self >= static_cast<int>(s.modules.size()) || glob == nullptr)
    return 0; // subscriptions are fixed once the chains are built
  // A comma-separated list of globs.
  int count = 0;
  std::string_view rest(glob);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string pattern(rest.substr(0, comma));
    for (int fid = 0; fid < gen::function_count; ++fid) {
      auto&& flag = s.modules[static_cast<size_t>(self)].subscribed[static_cast<size_t>(fid)];
      if (!flag && ::fnmatch(pattern.c_str(), gen::function_names[fid], 0) == 0) {
        flag = true;
        ++count;
      }
    }
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return count;
}

int host_publish(int /*self*/, const char* name, const char* signature, void* value) {
  if (name == nullptr || signature == nullptr)
    return -1;
  core_state& s = state();
  std::lock_guard<std::mutex> guard(s.registry_lock);
  return s.services.emplace(name, service{signature, value}).second ? 0 : -1;
}

void* host_lookup(const char* name, const char* signature) {
  if (name == nullptr || signature == nullptr)
    return nullptr;
  core_state& s = state();
  std::lock_guard<std::mutex> guard(s.registry_lock);
  auto it = s.services.find(name);
  return it != s.services.end() && it->second.signature == signature ? it->second.value : nullptr;
}

void host_set_value(const char* name, const char* value) {
  if (name == nullptr)
    return;
  core_state& s = state();
  std::lock_guard<std::mutex> guard(s.registry_lock);
  // Old strings stay alive: a reader may still hold the pointer get_value returned.
  auto& slot = s.values[name];
  if (slot != nullptr)
    s.retired_values.push_back(std::move(slot));
  slot = std::make_unique<std::string>(value != nullptr ? value : "");
}

const char* host_get_value(const char* name) {
  if (name == nullptr)
    return nullptr;
  core_state& s = state();
  std::lock_guard<std::mutex> guard(s.registry_lock);
  auto it = s.values.find(name);
  return it == s.values.end() ? nullptr : it->second->c_str();
}

int host_set_layer(int layer) {
  const int old = tls.layer;
  const int count = static_cast<int>(state().modules.size());
  tls.layer = std::clamp(layer, -1, count - 1);
  return old;
}

void host_log(int self, const char* message) {
  core_state& s = state();
  std::string who = self >= 0 && self < static_cast<int>(s.modules.size())
                        ? s.modules[static_cast<size_t>(self)].name
                        : std::string("module");
  report_line(who + ": " + (message != nullptr ? message : ""));
}

int host_layer_count() {
  return static_cast<int>(state().modules.size());
}

// Every function taking a communicator gets a chain (an empty one if no module wraps it), so
// that the application's calls pass through dispatch<>(), which substitutes the communicator.
int host_replace_world(int /*self*/, const void* comm) {
  core_state& s = state();
  if (comm == nullptr || !s.in_mpi_ready)
    return -1; // only while MPI_Init runs (mpi_ready): before any application call
  world_replacement = *static_cast<const MPI_Comm*>(comm);
  world_replaced = world_replacement != MPI_COMM_WORLD;
  s.empty_starts.assign(s.modules.size() + 1, 0);
  s.empty_chain = chain{0, nullptr, s.empty_starts.data()};
  for (int fid = 0; fid < gen::function_count; ++fid)
    if (gen::takes_communicator(fid) && chains[fid] == nullptr)
      chains[fid] = &s.empty_chain;
  return 0;
}

const void* host_call_site() {
  return tls.call_site;
}

const strata_host host_api = {STRATA_MODULE_ABI_VERSION,
                              gen::mpi_flavor,
                              host_function_count,
                              host_function_name,
                              host_function_id,
                              host_subscribe,
                              host_publish,
                              host_lookup,
                              host_set_value,
                              host_get_value,
                              now_ns,
                              host_set_layer,
                              host_log,
                              host_layer_count,
                              host_replace_world,
                              host_call_site};

// ---- loading --------------------------------------------------------------------------------

// A binary PMPI tool converted by `strata patch`: no descriptor, its MPI_X wrappers call ZMPI_X
// (the next layer). It takes no arguments and has no callbacks.
std::string load_pmpi_tool(const config::module_spec& spec, loaded_module& m) {
  static const strata_module patched_tool = {STRATA_MODULE_ABI_VERSION,
                                             nullptr,
                                             gen::mpi_flavor,
                                             "binary PMPI tool (patched with strata patch)",
                                             nullptr,
                                             nullptr,
                                             nullptr,
                                             nullptr,
                                             nullptr,
                                             nullptr,
                                             nullptr};
  const launch::elf_dynamic elf = launch::read_elf_dynamic(m.path);
  auto imports = [&](const char* upper, const char* lower) {
    for (const std::string& name : elf.imported)
      if (name.rfind(upper, 0) == 0 || name.rfind(lower, 0) == 0)
        return true;
    return false;
  };
  if (!imports("ZMPI_", "zmpi_")) {
    if (imports("PMPI_", "pmpi_"))
      return spec.origin + ": " + m.path +
             " is a PMPI tool that has not been patched: run 'strata patch " + m.path +
             " OUT.so' and load OUT.so";
    return spec.origin + ": " + m.path + " is not a Strata module: it has no " +
           STRATA_MODULE_SYMBOL + " symbol";
  }
  const std::string flavor = launch::flavor_of_libraries(elf.libraries);
  if (!flavor.empty() && flavor != gen::mpi_flavor)
    return spec.origin + ": PMPI tool '" + spec.name + "' was built for " + flavor +
           ", but this program uses " + gen::mpi_flavor;
  if (!spec.args.empty())
    return spec.origin + ": PMPI tool '" + spec.name + "' takes no arguments";
  m.desc = &patched_tool;
  const size_t slash = m.path.rfind('/');
  m.name = m.path.substr(slash == std::string::npos ? 0 : slash + 1);
  m.name = m.name.substr(0, m.name.rfind(".so"));
  return {};
}

std::string load_module(const config::module_spec& spec, const std::vector<std::string>& dirs,
                        loaded_module& m) {
  m.name = spec.name;
  m.path = config::find_module(spec.name, dirs);
  if (m.path.empty()) {
    std::string where;
    for (const std::string& d : dirs)
      where += (where.empty() ? "" : ":") + d;
    return spec.origin + ": unknown module '" + spec.name + "' (searched " + where + ")";
  }
  m.handle = ::dlopen(m.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (m.handle == nullptr) {
    const char* why = ::dlerror();
    return spec.origin + ": cannot load module '" + spec.name + "': " + (why ? why : "dlopen");
  }
  auto entry = reinterpret_cast<strata_module_entry>(::dlsym(m.handle, STRATA_MODULE_SYMBOL));
  if (entry == nullptr)
    return load_pmpi_tool(spec, m);
  m.desc = entry();
  if (m.desc == nullptr || m.desc->abi_version != STRATA_MODULE_ABI_VERSION)
    return spec.origin + ": module '" + spec.name + "' was built for module ABI version " +
           std::to_string(m.desc ? m.desc->abi_version : 0) + ", this core speaks version " +
           std::to_string(STRATA_MODULE_ABI_VERSION);
  if (m.desc->mpi_flavor == nullptr || std::strcmp(m.desc->mpi_flavor, gen::mpi_flavor) != 0)
    return spec.origin + ": module '" + spec.name + "' was built for " +
           (m.desc->mpi_flavor ? m.desc->mpi_flavor : "no MPI") + ", but this program uses " +
           gen::mpi_flavor;
  if (m.desc->name != nullptr && m.desc->name[0] != '\0')
    m.name = m.desc->name;
  return {};
}

struct address_range {
  uintptr_t begin;
  uintptr_t end;
};

struct segment_search {
  link_map* module;
  std::vector<address_range> ranges;
};

int collect_segments(dl_phdr_info* info, size_t, void* raw) {
  auto* search = static_cast<segment_search*>(raw);
  if (info->dlpi_addr != search->module->l_addr ||
      std::strcmp(info->dlpi_name != nullptr ? info->dlpi_name : "",
                  search->module->l_name != nullptr ? search->module->l_name : "") != 0)
    return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD)
      search->ranges.push_back(
          {info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz});
  }
  return 1;
}

// The module's own definitions of MPI functions (wrapper modules). dlsym on the module's handle
// also finds definitions in its dependencies (libstrata, libmpi), which are not wrappers: a
// definition counts only if it lies in the module's own segments. A module listed several times
// is searched once.
void find_wrappers(loaded_module& m) {
  // By dlopen handle; loading is serial. Never destroyed: no exit-time destructor in the core.
  static auto& known = *new std::map<void*, std::vector<void*>>();
  if (auto it = known.find(m.handle); it != known.end()) {
    m.wrappers = it->second;
    return;
  }
  segment_search search{nullptr, {}};
  ::dlinfo(m.handle, RTLD_DI_LINKMAP, &search.module);
  if (search.module != nullptr)
    ::dl_iterate_phdr(collect_segments, &search);
  m.wrappers.assign(gen::function_count, nullptr);
  for (int fid = 0; fid < gen::function_count; ++fid) {
    void* sym = ::dlsym(m.handle, gen::function_names[fid]);
    const auto address = reinterpret_cast<uintptr_t>(sym);
    for (const address_range& r : search.ranges)
      if (sym != nullptr && address >= r.begin && address < r.end)
        m.wrappers[static_cast<size_t>(fid)] = sym;
  }
  known.emplace(m.handle, m.wrappers);
}

// strata_module_polls_v1, if the module has it (module.h).
void ask_poll_sampling(loaded_module& m) {
  if (m.desc == nullptr || m.handle == nullptr)
    return;
  auto entry =
      reinterpret_cast<strata_module_polls_entry>(::dlsym(m.handle, STRATA_MODULE_POLLS_SYMBOL));
  if (entry == nullptr)
    return;
  strata_event_fn untimed = nullptr;
  const uint32_t interval = entry(m.state, &untimed);
  if (interval > 1 && untimed != nullptr) {
    m.poll_interval = interval;
    m.untimed_poll = untimed;
  }
}

void find_counter_entry(loaded_module& m) {
  if (m.desc != nullptr && m.handle != nullptr)
    m.counter = reinterpret_cast<strata_module_counter_entry>(
        ::dlsym(m.handle, STRATA_MODULE_COUNTER_SYMBOL));
}

// Whether every event module of the group [pos, end) gives a counter for `fid` and `what`. Each
// is asked even when an earlier one said no: a module learns from the question which of its
// polls are sampled.
bool group_counters(const core_state& s, std::vector<chain_entry>& list, size_t pos, int fid,
                    int what) {
  const auto end = static_cast<size_t>(list[pos].group_end);
  bool all = true;
  for (size_t k = pos; k < end; ++k) {
    const loaded_module& m = s.modules[static_cast<size_t>(list[k].layer)];
    list[k].counter = m.counter != nullptr ? m.counter(m.state, fid, what) : nullptr;
    all = all && list[k].counter != nullptr;
  }
  return all;
}

// Counting instead of events (module.h, strata_module_counter_v1), asked once the modules'
// mpi_ready have run. The mode is stored last: no other thread calls MPI before MPI_Init returns.
void enable_counting(core_state& s) {
  bool any = false;
  for (const loaded_module& m : s.modules)
    any = any || m.counter != nullptr;
  if (!any)
    return;
  int level = MPI_THREAD_SINGLE;
  using query_fn = int (*)(int*);
  if (auto query = reinterpret_cast<query_fn>(find_real("PMPI_Query_thread")))
    query(&level);
  for (int fid = 0; fid < gen::function_count; ++fid) {
    auto& list = s.entries[static_cast<size_t>(fid)];
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i].wrapper != nullptr || (i > 0 && list[i - 1].wrapper == nullptr))
        continue; // not the first entry of an event group
      uint8_t mode = count_none;
      if (group_counters(s, list, i, fid, STRATA_COUNT_CALLS))
        mode = count_calls;
      else if (gen::is_poll_function(fid) && list[i].poll_interval != 0 &&
               group_counters(s, list, i, fid, STRATA_COUNT_UNTIMED_POLLS))
        mode = count_untimed_polls;
      else if (gen::is_poll_function(fid) && list[i].poll_interval != 0 &&
               group_counters(s, list, i, fid, STRATA_COUNT_EMPTY_POLLS))
        mode = count_empty_polls;
      list[i].atomic_counts = level == MPI_THREAD_MULTIPLE;
      list[i].count_direct = !list[i].atomic_counts &&
                             list[i].group_end == static_cast<int>(i) + 1 &&
                             list[i].group_end == static_cast<int>(list.size());
      list[i].count_mode = mode;
    }
    // One counting module and nothing else: the entry point counts (chain::direct_counter, or
    // chain::untimed_poll_counter for polls counted without a look at what they completed).
    if (list.size() != 1 || !list[0].count_direct || world_replaced)
      continue;
    chain& c = s.chain_storage[static_cast<size_t>(fid)];
    const uint8_t wanted = gen::is_poll_function(fid) ? count_empty_polls : count_calls;
    if (list[0].count_mode == wanted)
      c.direct_counter = list[0].counter;
    else if (list[0].count_mode == count_untimed_polls)
      c.untimed_poll_counter = list[0].counter;
  }
}

// A group samples polls only if all its event modules accept it; at the smallest interval.
void set_poll_sampling(const core_state& s, std::vector<chain_entry>& list) {
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].wrapper != nullptr || (i > 0 && list[i - 1].wrapper == nullptr))
      continue; // not the first entry of an event group
    uint32_t interval = UINT32_MAX;
    for (auto k = i; k < static_cast<size_t>(list[i].group_end); ++k) {
      const loaded_module& m = s.modules[static_cast<size_t>(list[k].layer)];
      interval = m.poll_interval < interval ? m.poll_interval : interval;
      list[k].untimed_poll = m.untimed_poll;
    }
    list[i].poll_interval = interval > 1 && interval != UINT32_MAX ? interval : 0;
  }
}

void build_chains(core_state& s) {
  const size_t layers = s.modules.size();
  s.entries.assign(gen::function_count, {});
  s.starts.assign(gen::function_count, {});
  s.chain_storage.assign(gen::function_count, {});
  for (int fid = 0; fid < gen::function_count; ++fid) {
    auto& list = s.entries[static_cast<size_t>(fid)];
    for (size_t layer = 0; layer < layers; ++layer) {
      const loaded_module& m = s.modules[layer];
      chain_entry e;
      e.layer = static_cast<int>(layer);
      if (m.wrappers[static_cast<size_t>(fid)] != nullptr) {
        e.wrapper = m.wrappers[static_cast<size_t>(fid)];
      } else if (m.subscribed[static_cast<size_t>(fid)] &&
                 (m.desc->enter != nullptr || m.desc->exit != nullptr)) {
        e.enter = m.desc->enter;
        e.exit = m.desc->exit;
        e.state = m.state;
      } else {
        continue;
      }
      list.push_back(e);
    }
    if (list.empty())
      continue;
    for (size_t i = list.size(); i-- > 0;) {
      if (list[i].wrapper != nullptr)
        list[i].group_end = static_cast<int>(i);
      else
        list[i].group_end = (i + 1 < list.size() && list[i + 1].wrapper == nullptr)
                                ? list[i + 1].group_end
                                : static_cast<int>(i + 1);
    }
    set_poll_sampling(s, list);
    auto& start = s.starts[static_cast<size_t>(fid)];
    start.resize(layers + 1);
    size_t next = 0;
    for (size_t caller = 0; caller <= layers; ++caller) { // caller - 1 is the calling layer
      while (next < list.size() && list[next].layer < static_cast<int>(caller))
        ++next;
      start[caller] = static_cast<uint16_t>(next);
    }
    chain& c = s.chain_storage[static_cast<size_t>(fid)];
    c.size = static_cast<int>(list.size());
    c.entries = list.data();
    c.start_after = start.data();
    chains[fid] = &c;
  }
}

// Runs `fn` for each module with the thread's layer set to it, so its MPI calls go below it.
template <typename Fn> void for_each_module(Fn fn) {
  core_state& s = state();
  const int saved = tls.layer;
  for (size_t i = 0; i < s.modules.size(); ++i) {
    tls.layer = static_cast<int>(i);
    fn(s.modules[i]);
  }
  tls.layer = saved;
}

} // namespace internal

void* find_real(const char* name) {
  void* sym = ::dlsym(RTLD_NEXT, name);
  if (sym != nullptr)
    return sym;
  // Loaded by dlopen rather than preloaded or linked: fall back to the global scope, but never
  // to ourselves (that would recurse forever).
  sym = ::dlsym(RTLD_DEFAULT, name);
  Dl_info info{};
  link_map* owner = nullptr;
  if (sym != nullptr &&
      ::dladdr1(sym, &info, reinterpret_cast<void**>(&owner), RTLD_DL_LINKMAP) != 0 &&
      owner == own_link_map())
    return nullptr;
  return sym;
}

void load_modules_once() {
  if (g_loaded.exchange(true))
    return;
  core_state& s = state();
  const config::stack stack =
      config::select_stack([](const char* n) { return std::getenv(n); },
                           own_directory() + "/../../../etc/strata/strata.conf");
  if (!stack.ok()) {
    s.load_error = stack.error;
    return;
  }
  if (stack.modules.size() > 60000) {
    s.load_error = "too many modules";
    return;
  }
  const auto dirs = config::module_dirs([](const char* n) { return std::getenv(n); },
                                        own_directory() + "/modules");
  s.modules.resize(stack.modules.size());
  s.loading = true;
  for (size_t i = 0; i < stack.modules.size(); ++i) {
    loaded_module& m = s.modules[i];
    std::string error = load_module(stack.modules[i], dirs, m);
    if (error.empty()) {
      m.subscribed.assign(gen::function_count, false);
      find_wrappers(m);
      std::vector<strata_module_arg> args;
      for (const auto& [key, value] : stack.modules[i].args)
        args.push_back({key.c_str(), value.c_str()});
      char reason[512] = {0};
      const int saved = host_set_layer(static_cast<int>(i));
      const int rc =
          m.desc->load == nullptr
              ? 0
              : m.desc->load(&host_api, static_cast<int>(i), args.data(),
                             static_cast<int>(args.size()), &m.state, reason, sizeof(reason) - 1);
      tls.layer = saved;
      if (rc != 0)
        error = stack.modules[i].origin + ": module '" + m.name +
                "' refused its arguments: " + (reason[0] ? reason : "no reason given");
      else {
        ask_poll_sampling(m);
        find_counter_entry(m);
      }
    }
    if (!error.empty()) {
      s.load_error = error;
      s.modules.clear();
      s.loading = false;
      return;
    }
  }
  s.loading = false;
  build_chains(s);
  for (size_t i = 0; i < s.modules.size(); ++i)
    add_region_listener(s.modules[i].handle, s.modules[i].state, static_cast<int>(i));
  if (!s.modules.empty())
    python_sites::start(); // before MPI_Init's own call site is taken
}

void after_init() {
  if (g_ready.exchange(true))
    return;
  clock_finish_calibration();
  core_state& s = state();
  if (!s.load_error.empty()) {
    using rank_fn = int (*)(MPI_Comm, int*);
    using abort_fn = int (*)(MPI_Comm, int);
    int rank = 0;
    if (auto comm_rank = reinterpret_cast<rank_fn>(find_real("PMPI_Comm_rank")))
      comm_rank(MPI_COMM_WORLD, &rank);
    // Every rank reads the same configuration, so rank 0 fails too: it reports and its abort
    // ends the job, and the others wait for that abort rather than racing it (on a loaded
    // machine rank 0 can be seconds behind, and a second line, or none, was printed). A rank
    // whose stack failed alone (a module missing on its node) reports after the wait.
    if (rank != 0) {
      timespec pause{30, 0};
      while (::nanosleep(&pause, &pause) != 0) {
      }
    }
    report_line("error: " + s.load_error);
    // Time for the launcher to forward the line before the abort ends the job (MPICH's
    // mpiexec lost a monitor's line this way on a loaded machine).
    timespec forward{0, 500000000};
    while (::nanosleep(&forward, &forward) != 0) {
    }
    if (auto abort = reinterpret_cast<abort_fn>(find_real("PMPI_Abort")))
      abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);
  }
  s.in_mpi_ready = true;
  for_each_module([](loaded_module& m) {
    if (m.desc->mpi_ready != nullptr)
      m.desc->mpi_ready(m.state);
  });
  s.in_mpi_ready = false;
  enable_counting(s);
  region_listener_count.store(region_listener_pending, std::memory_order_release);
}

void before_finalize() {
  if (!g_ready.load() || g_finalizing.exchange(true))
    return;
  for_each_module([](loaded_module& m) {
    if (m.desc->finalize != nullptr)
      m.desc->finalize(m.state);
  });
}

void after_finalize() {
  if (!g_finalizing.load() || g_finalized.exchange(true))
    return;
  region_listener_count.store(0, std::memory_order_release);
  for_each_module([](loaded_module& m) {
    if (m.desc->unload != nullptr)
      m.desc->unload(m.state);
  });
}

void pcontrol(int level) {
  core_state& s = state();
  const int saved = tls.layer;
  // A module's own MPI_Pcontrol reaches only the modules below it.
  for (int i = saved + 1; i < static_cast<int>(s.modules.size()); ++i) {
    const loaded_module& m = s.modules[static_cast<size_t>(i)];
    if (m.desc->pcontrol != nullptr) {
      tls.layer = i;
      m.desc->pcontrol(level, m.state);
    }
  }
  tls.layer = saved;
}

} // namespace strata::core

namespace {
using pcontrol_fn = int (*)(int, ...);
pcontrol_fn real_pcontrol = nullptr;
std::once_flag real_functions_resolved;

// Resolving at load keeps the entry points' first calls cheap; the clock's calibration starts
// with it, as early as the library can (the longer before MPI_Init ends, the better the rate).
__attribute__((constructor)) void resolve_at_load() {
  strata::core::resolve_real_once();
}
} // namespace

namespace strata::core {
void resolve_real_once() {
  std::call_once(real_functions_resolved, [] {
    clock_start_calibration();
    gen::resolve_real_functions();
    decode::resolve_api();
    real_pcontrol = reinterpret_cast<pcontrol_fn>(find_real("PMPI_Pcontrol"));
  });
}

void missing_real(const char* name) {
  report_line(std::string("error: the MPI library has no ") + name +
              "; is the program linked against the MPI that Strata was built for?");
  std::_Exit(1);
}
} // namespace strata::core

// MPI_Pcontrol is variadic, so it is written by hand; MPI ignores the variadic part.
extern "C" STRATA_EXPORT int MPI_Pcontrol(const int level, ...) {
  strata::core::resolve_real_once();
  if (!strata::core::tls.in_real)
    strata::core::pcontrol(level);
  return real_pcontrol != nullptr ? real_pcontrol(level) : MPI_SUCCESS;
}
extern "C" STRATA_EXPORT int PMPI_Pcontrol(const int level, ...)
    __attribute__((alias("MPI_Pcontrol")));
extern "C" STRATA_EXPORT int ZMPI_Pcontrol(const int level, ...)
    __attribute__((alias("MPI_Pcontrol")));

// ---- probing, for the `strata` command ----------------------------------------------------
// `strata exec` checks the stack with the very code MPI_Init uses, before it starts the program,
// and `strata modules` describes each module. Neither initialises MPI.
#include "core/probe.h"

extern "C" STRATA_EXPORT int strata_core_probe(const char* name, const char* origin, int nargs,
                                               const char* const* keys, const char* const* values,
                                               strata_probe* out) {
  using namespace strata;
  *out = strata_probe{};
  config::module_spec spec;
  spec.name = name;
  spec.origin = origin;
  for (int i = 0; i < nargs; ++i)
    spec.args.emplace_back(keys[i], values[i]);
  const auto dirs = config::module_dirs([](const char* n) { return std::getenv(n); },
                                        core::own_directory() + "/modules");
  core::loaded_module m;
  std::string error = core::load_module(spec, dirs, m);
  std::string functions;
  if (error.empty()) {
    core::find_wrappers(m);
    m.subscribed.assign(gen::function_count, false);
    core::core_state& s = core::state();
    // Probe as a one-module stack at layer 0, then forget it.
    s.modules.clear();
    s.modules.push_back(m);
    s.loading = true;
    char reason[512] = {0};
    std::vector<strata_module_arg> args;
    for (const auto& [k, v] : spec.args)
      args.push_back({k.c_str(), v.c_str()});
    void* st = nullptr;
    const int rc = m.desc->load == nullptr ? 0
                                           : m.desc->load(&core::host_api, 0, args.data(),
                                                          static_cast<int>(args.size()), &st,
                                                          reason, sizeof(reason) - 1);
    s.loading = false;
    m.subscribed = s.modules[0].subscribed;
    s.modules.clear();
    if (rc != 0)
      error = spec.origin + ": module '" + m.name +
              "' refused its arguments: " + (reason[0] ? reason : "no reason given");
    else if (m.desc->unload != nullptr)
      m.desc->unload(st);
    for (int fid = 0; fid < gen::function_count; ++fid) {
      const bool wrapped = m.wrappers[static_cast<size_t>(fid)] != nullptr;
      const bool events = m.subscribed[static_cast<size_t>(fid)];
      out->wrapped_count += wrapped ? 1 : 0;
      out->event_count += events && !wrapped ? 1 : 0;
      if (wrapped || events)
        functions += (functions.empty() ? "" : ",") + std::string(gen::function_names[fid]);
    }
    std::snprintf(out->name, sizeof(out->name), "%s", m.name.c_str());
    std::snprintf(out->description, sizeof(out->description), "%s",
                  m.desc->description != nullptr ? m.desc->description : "");
    std::snprintf(out->path, sizeof(out->path), "%s", m.path.c_str());
    std::snprintf(out->functions, sizeof(out->functions), "%s", functions.c_str());
  }
  std::snprintf(out->error, sizeof(out->error), "%s", error.c_str());
  return error.empty() ? 0 : 1;
}
