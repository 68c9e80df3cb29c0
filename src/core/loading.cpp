// Loading the stack: modules (native and patched PMPI tools) found, opened and ordered, their
// wrappers and callbacks built into one chain per MPI function.
#include "common/elf_dynamic.hpp"
#include "core/core_internal.hpp"
#include "core/regions.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

namespace strata::core {
inline namespace internal {

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
  const common::elf_dynamic elf = common::read_elf_dynamic(m.path);
  if (!elf.error.empty())
    return spec.origin + ": module '" + spec.name + "' has no " + STRATA_MODULE_SYMBOL +
           " symbol and is not a PMPI tool that can be loaded: " + elf.error;
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
  const std::string flavor = common::flavor_of_libraries(elf.libraries);
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
  m.origin = spec.origin;
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
  if (const auto* seen =
          static_cast<const int*>(::dlsym(m.handle, STRATA_MODULE_OWN_CALLS_SEEN_SYMBOL)))
    m.own_calls_seen = *seen != 0;
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

// strata_module_fields_v1, if the module has it (module.h): what it reads of an event.
void ask_fields(loaded_module& m) {
  if (m.desc == nullptr || m.handle == nullptr)
    return;
  auto entry =
      reinterpret_cast<strata_module_fields_entry>(::dlsym(m.handle, STRATA_MODULE_FIELDS_SYMBOL));
  if (entry != nullptr)
    m.fields = entry(m.state) & STRATA_FIELD_ALL;
  auto by_function = reinterpret_cast<strata_module_function_fields_entry>(
      ::dlsym(m.handle, STRATA_MODULE_FUNCTION_FIELDS_SYMBOL));
  if (by_function == nullptr)
    return;
  m.function_fields.resize(gen::function_count);
  for (int fid = 0; fid < gen::function_count; ++fid)
    m.function_fields[static_cast<size_t>(fid)] = by_function(m.state, fid) & STRATA_FIELD_ALL;
}

uint32_t with_prerequisites(uint32_t fields, int fid) {
  return fields_with_prerequisites(fields, gen::bytes_prerequisites(fid));
}

void find_counter_entry(loaded_module& m) {
  if (m.desc == nullptr || m.handle == nullptr)
    return;
  m.counter = reinterpret_cast<strata_module_counter_entry>(
      ::dlsym(m.handle, STRATA_MODULE_COUNTER_SYMBOL));
  m.timed_counts = reinterpret_cast<strata_module_timed_counts_entry>(
      ::dlsym(m.handle, STRATA_MODULE_TIMED_COUNTS_SYMBOL));
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

// The group starting at entry i is that entry alone, with only the real function below it.
bool alone_above_real(const std::vector<chain_entry>& list, size_t i) {
  return list[i].group_end == static_cast<int>(i) + 1 &&
         list[i].group_end == static_cast<int>(list.size());
}

// The functions whose slot a module took to lend (strata_module_timed_counts_v1 non-zero) and
// then left the slot or the latest exit out: their calls stay events, and the module is told so
// once, at its first such function.
struct incomplete_loans {
  int first = -1; // function id
  int others = 0;
  bool no_slot = false;
  bool no_latest_exit = false;
  void add(int fid, const strata_timed_counts& counts) {
    if (first >= 0) {
      ++others;
      return;
    }
    first = fid;
    no_slot = counts.slot == nullptr;
    no_latest_exit = counts.latest_exit_ns == nullptr;
  }
};

std::string incomplete_loans_line(const loaded_module& m, const incomplete_loans& loans) {
  const std::string missing = loans.no_slot && loans.no_latest_exit
                                  ? "out->slot and out->latest_exit_ns null"
                              : loans.no_slot ? "out->slot null"
                                              : "out->latest_exit_ns null";
  const std::string others = loans.others == 0 ? std::string()
                             : loans.others == 1
                                 ? " and 1 other function"
                                 : " and " + std::to_string(loans.others) + " other functions";
  return "warning: " + m.origin + ": module '" + m.name + "' cannot have " +
         gen::function_names[loans.first] + others +
         " summed by the core: " + STRATA_MODULE_TIMED_COUNTS_SYMBOL + " returned non-zero with " +
         missing + "; " + (loans.others == 0 ? "its" : "their") + " calls stay events";
}

// Timed calls summed by the core into the slots a module lends (module.h,
// strata_module_timed_counts_v1), asked after enable_counting: for an entry that times every
// call of its function with one module's exit callback and nothing below it but MPI. Returns a
// line per module that said yes without the slot or the latest exit.
std::vector<std::string> enable_timed_counts(core_state& s, int thread_level) {
  std::vector<std::string> lines;
  if (thread_level == MPI_THREAD_MULTIPLE)
    return lines; // the sums are plain adds
  std::vector<incomplete_loans> incomplete(s.modules.size());
  std::vector<uint32_t> short_pairs(s.modules.size(), 0);
  for (int fid = 0; fid < gen::function_count; ++fid) {
    for (chain_entry& e : s.entries[static_cast<size_t>(fid)]) {
      if (!e.sole_exit_every_call || e.count_mode != count_none)
        continue;
      const loaded_module& m = s.modules[static_cast<size_t>(e.layer)];
      strata_timed_counts counts{};
      if (m.timed_counts == nullptr || m.timed_counts(m.state, fid, &counts) == 0)
        continue;
      if (counts.slot == nullptr || counts.latest_exit_ns == nullptr) {
        incomplete[static_cast<size_t>(e.layer)].add(fid, counts);
        continue;
      }
      e.timed_histograms = counts.histograms;
      e.latest_exit = counts.latest_exit_ns;
      // The sums per peer must cover every world rank, which the summed path adds to without a
      // look at their count (peer_sums.hpp).
      if (counts.pairs != nullptr && counts.pair_count != 0) {
        if (counts.pair_count >= static_cast<uint32_t>(decode::world_rank_count())) {
          e.timed_pair_count = counts.pair_count;
          e.timed_pairs = counts.pairs;
        } else {
          short_pairs[static_cast<size_t>(e.layer)] = counts.pair_count;
        }
      }
      if (counts.comms != nullptr && counts.comm_count != 0) {
        e.timed_comm_count = counts.comm_count;
        e.timed_comms = counts.comms;
      }
      if (fid == gen::fid_MPI_Start || fid == gen::fid_MPI_Startall) {
        e.timed_started = counts.started;
        e.timed_after_start = counts.after_start;
        // The table is looked up by the arguments, not by the event's requests.
        if (counts.started != nullptr)
          e.timed_fields = with_prerequisites(e.timed_fields & ~STRATA_FIELD_REQUESTS, fid);
      }
      e.timed_slot = counts.slot; // last: the call path tests it
    }
  }
  for (size_t i = 0; i < incomplete.size(); ++i) {
    if (incomplete[i].first >= 0)
      lines.push_back(incomplete_loans_line(s.modules[i], incomplete[i]));
    if (short_pairs[i] != 0)
      lines.push_back("warning: " + s.modules[i].origin + ": module '" + s.modules[i].name +
                      "' lent sums per peer for " + std::to_string(short_pairs[i]) +
                      " world ranks of " + std::to_string(decode::world_rank_count()) + " (" +
                      STRATA_MODULE_TIMED_COUNTS_SYMBOL + ", pair_count): the core adds none");
  }
  return lines;
}

// Counting instead of events (module.h, strata_module_counter_v1), asked once the modules'
// mpi_ready have run, then the timed calls the core sums. The mode is stored last: no other
// thread calls MPI before MPI_Init returns.
std::vector<std::string> enable_counting(core_state& s) {
  bool any = false;
  for (const loaded_module& m : s.modules)
    any = any || m.counter != nullptr || m.timed_counts != nullptr;
  if (!any)
    return {};
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
      list[i].count_direct = !list[i].atomic_counts && alone_above_real(list, i);
      list[i].count_mode = mode;
      if (mode != count_none)
        list[i].sole_exit_every_call = false;
    }
    // One counting module and nothing else: the entry point counts (chain::direct_counter, or
    // chain::untimed_poll_counter for polls counted without a look at what they completed).
    if (list.size() != 1 || !list[0].count_direct || world_replaced())
      continue;
    chain& c = s.chain_storage[static_cast<size_t>(fid)];
    const uint8_t wanted = gen::is_poll_function(fid) ? count_empty_polls : count_calls;
    if (list[0].count_mode == wanted)
      c.direct_counter = list[0].counter;
    else if (list[0].count_mode == count_untimed_polls)
      c.untimed_poll_counter = list[0].counter;
  }
  return enable_timed_counts(s, level);
}

// Some module reads the bytes received by a completion: every call that makes a request must
// then note its kind (core/completions.hpp), whatever its own modules read of it.
bool request_kinds_wanted(const core_state& s) {
  for (const loaded_module& m : s.modules)
    for (int fid = 0; fid < gen::function_count; ++fid)
      if (gen::completes_requests(fid) &&
          ((m.function_fields.empty() ? m.fields : m.function_fields[static_cast<size_t>(fid)]) &
           (STRATA_FIELD_RECEIVED | STRATA_FIELD_STATUS)) != 0)
        return true;
  return false;
}

// A group samples polls only if all its event modules accept it; at the smallest interval. Its
// events carry the union of the fields its modules read. A call can also enter a group in its
// middle: a module's own call from its layer (its wrapper of another function calling this one,
// where the module is also this group's event module) starts below the module. So each entry
// gets the settings of the rest of its group; only a group's first entry takes the shortcuts
// (sole exit, counting), which a call entering in the middle never looks for.
void set_group_settings(const core_state& s, std::vector<chain_entry>& list, int fid,
                        bool note_request_kinds) {
  const bool polls = gen::is_poll_function(fid);
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].wrapper != nullptr)
      continue;
    uint32_t interval = UINT32_MAX;
    uint32_t fields = 0;
    bool any_enter = false;
    for (auto k = i; k < static_cast<size_t>(list[i].group_end); ++k) {
      const loaded_module& m = s.modules[static_cast<size_t>(list[k].layer)];
      interval = m.poll_interval < interval ? m.poll_interval : interval;
      list[k].untimed_poll = m.untimed_poll;
      fields |= m.function_fields.empty() ? m.fields : m.function_fields[static_cast<size_t>(fid)];
      any_enter = any_enter || list[k].enter != nullptr;
    }
    list[i].poll_interval = interval > 1 && interval != UINT32_MAX ? interval : 0;
    if (note_request_kinds && gen::makes_request(fid))
      fields |= STRATA_FIELD_RECEIVED;
    list[i].fields = with_prerequisites(fields, fid);
    list[i].timed_fields = with_prerequisites(fields & ~STRATA_FIELD_PEER, fid);
    list[i].any_enter = any_enter;
    if (i > 0 && list[i - 1].wrapper == nullptr)
      continue; // not the first entry of an event group
    list[i].sole_exit =
        alone_above_real(list, i) && list[i].enter == nullptr && list[i].exit != nullptr;
    // Counting, set later, clears it (enable_counting).
    list[i].sole_exit_every_call = list[i].sole_exit && (!polls || list[i].poll_interval == 0);
  }
}

void build_chains(core_state& s) {
  const size_t layers = s.modules.size();
  s.entries.assign(gen::function_count, {});
  s.first_below.assign(gen::function_count, {});
  s.chain_storage.assign(gen::function_count, {});
  const bool note_request_kinds = request_kinds_wanted(s);
  for (int fid = 0; fid < gen::function_count; ++fid) {
    auto& list = s.entries[static_cast<size_t>(fid)];
    for (size_t layer = 0; layer < layers; ++layer) {
      const loaded_module& m = s.modules[layer];
      chain_entry e;
      e.layer = static_cast<int>(layer);
      e.calls_layer = own_calls_layer(s, layer);
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
    set_group_settings(s, list, fid, note_request_kinds);
    for (size_t i = 0; i < list.size(); ++i)
      list[i].index = static_cast<int>(i);
    auto& first = s.first_below[static_cast<size_t>(fid)];
    first.resize(layers + 1);
    size_t next = 0;
    for (size_t caller = 0; caller <= layers; ++caller) { // caller - 1 is the calling layer
      while (next < list.size() && list[next].layer < static_cast<int>(caller))
        ++next;
      first[caller] = next < list.size() ? &list[next] : nullptr;
    }
    chain& c = s.chain_storage[static_cast<size_t>(fid)];
    c.size = static_cast<int>(list.size());
    c.entries = list.data();
    c.first_below = first.data();
    chains[fid] = &c;
  }
}

std::string resolve_module_options(loaded_module& m, config::module_spec& spec) {
  if (m.handle == nullptr || m.desc == nullptr)
    return {};
  auto entry = reinterpret_cast<strata_module_options_entry>(
      ::dlsym(m.handle, STRATA_MODULE_OPTIONS_SYMBOL));
  const strata_module_options* declared = entry != nullptr ? entry() : nullptr;
  // Fields are read only as far as the module's struct reaches.
  if (declared == nullptr || declared->size < sizeof(uint32_t) + sizeof(int) ||
      declared->count < 0 || (declared->count > 0 && declared->options == nullptr))
    return {};
  m.options.clear();
  for (int i = 0; i < declared->count; ++i) {
    const strata_option& o = declared->options[i];
    config::option_decl d;
    d.key = o.key != nullptr ? o.key : "";
    d.type = o.type != nullptr ? o.type : "string";
    if (o.default_value != nullptr)
      d.default_value = o.default_value;
    d.help = o.help != nullptr ? o.help : "";
    for (std::string_view rest = o.env != nullptr ? o.env : ""; !rest.empty();) {
      const size_t comma = rest.find(',');
      if (comma != 0)
        d.env.emplace_back(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    m.options.push_back(std::move(d));
  }
  config::resolved_options resolved = config::resolve_options(
      m.name, m.options, spec.args, [](const char* n) { return std::getenv(n); });
  if (!resolved.ok())
    return spec.origin + ": " + resolved.error;
  spec.args = std::move(resolved.values);
  return {};
}

// Whether the module takes processes out of the application's world with these arguments
// (strata_module_takes_ranks_v1), asked before its `load`.
void ask_takes_ranks(loaded_module& m, const config::module_spec& spec) {
  if (m.handle == nullptr || m.desc == nullptr)
    return;
  auto entry = reinterpret_cast<strata_module_takes_ranks_entry>(
      ::dlsym(m.handle, STRATA_MODULE_TAKES_RANKS_SYMBOL));
  if (entry == nullptr)
    return;
  std::vector<strata_module_arg> args;
  for (const auto& [key, value] : spec.args)
    args.push_back({key.c_str(), value.c_str()});
  m.takes_ranks = entry(args.data(), static_cast<int>(args.size())) != 0;
}

void chain_every_communicator_function(core_state& s) {
  s.empty_first_below.assign(s.modules.size() + 1, nullptr);
  s.empty_chain = chain{0, nullptr, s.empty_first_below.data()};
  for (int fid = 0; fid < gen::function_count; ++fid)
    if (gen::takes_communicator(fid) && chains[fid] == nullptr)
      chains[fid] = &s.empty_chain;
}

} // namespace internal

void load_modules_once() {
  if (g_loaded.exchange(true))
    return;
  core_state& s = state();
  // The language the program started MPI from: its first init came through a Fortran binding's
  // entry point (fortran_entries.cpp), or not. A fact for the modules' records.
  host_api.set_value("strata.init_language", tls.fortran_fid >= 0 ? "Fortran" : "C");
  config::stack stack = config::select_stack([](const char* n) { return std::getenv(n); },
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
  auto fail = [&s](const std::string& error) {
    s.load_error = error;
    s.modules.clear();
    s.loading = false;
  };
  // Open every module first: a module that takes ranks out of the application's world goes
  // first, whatever the order written, so that every other one starts from the application's
  // processes only.
  std::vector<loaded_module> opened(stack.modules.size());
  for (size_t i = 0; i < stack.modules.size(); ++i) {
    std::string error = load_module(stack.modules[i], dirs, opened[i]);
    if (error.empty())
      error = resolve_module_options(opened[i], stack.modules[i]);
    if (!error.empty())
      return fail(error);
    ask_takes_ranks(opened[i], stack.modules[i]);
  }
  std::vector<size_t> order(opened.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_partition(order.begin(), order.end(),
                        [&](size_t i) { return opened[i].takes_ranks; });
  if (order.size() > 1 && opened[order[1]].takes_ranks)
    return fail(stack.modules[order[1]].origin + ": modules '" + opened[order[0]].name + "' and '" +
                opened[order[1]].name +
                "' both take processes out of the application's world; a stack can have one");
  s.modules.resize(opened.size());
  s.loading = true;
  for (size_t i = 0; i < order.size(); ++i) {
    loaded_module& m = s.modules[i];
    m = std::move(opened[order[i]]);
    const config::module_spec& spec = stack.modules[order[i]];
    m.subscribed.assign(gen::function_count, false);
    find_wrappers(m);
    std::vector<strata_module_arg> args;
    for (const auto& [key, value] : spec.args)
      args.push_back({key.c_str(), value.c_str()});
    char reason[512] = {0};
    const int saved = tls.layer;
    tls.layer = own_calls_layer(s, i);
    const int rc =
        m.desc->load == nullptr
            ? 0
            : m.desc->load(&host_api, static_cast<int>(i), args.data(),
                           static_cast<int>(args.size()), &m.state, reason, sizeof(reason) - 1);
    tls.layer = saved;
    if (rc != 0)
      return fail(spec.origin + ": module '" + m.name +
                  "' refused its arguments: " + (reason[0] ? reason : "no reason given"));
    ask_poll_sampling(m);
    ask_fields(m);
    find_counter_entry(m);
  }
  s.loading = false;
  build_chains(s);
  for (size_t i = 0; i < s.modules.size(); ++i)
    add_region_listener(s.modules[i].handle, s.modules[i].state, static_cast<int>(i),
                        own_calls_layer(s, i));
  if (!s.modules.empty())
    python_sites::start(); // before MPI_Init's own call site is taken
}

} // namespace strata::core
