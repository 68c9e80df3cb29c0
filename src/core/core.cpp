// The core's state and the host API offered to modules (include/strata/module.h); the real MPI
// functions and MPI_Pcontrol. Loading is in loading.cpp, the life cycle in lifecycle.cpp.
#include "core/core_internal.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fnmatch.h>
#include <unistd.h>

namespace strata::core {

extern "C" {
alignas(4) unsigned char strata_call_marks[mark_count];
const chain_entry* strata_usual_entries[gen::function_count];
}
__thread thread_state tls __attribute__((tls_model("initial-exec"))) = {
    -1, thread_unlisted, nullptr, 1, 0, nullptr, -1, nullptr, {}, &discarded_posts};
const chain* chains[gen::function_count];
MPI_Comm world_replacement = MPI_COMM_WORLD;
MPI_Comm modules_world = MPI_COMM_WORLD;
int world_replacing_layer = -1;

inline namespace internal {

core_state& state() {
  static core_state* s = new core_state(); // never destroyed: see core_state
  return *s;
}

std::atomic<bool> g_loaded{false};

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
  tls.layer = std::clamp(layer, -1, count - 1); // STRATA_LAYER_MPI: the last layer's calls
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

const void* host_call_site() {
  return python_sites::call_site(tls.call_site); // a Python site as start_event takes it
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
                              host_call_site,
                              host_world,
                              host_end_process,
                              clock_check};

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

void pcontrol(int level) {
  core_state& s = state();
  const int saved = tls.layer;
  // A module's own MPI_Pcontrol reaches only the modules below it.
  for (int i = saved + 1; i < static_cast<int>(s.modules.size()); ++i) {
    const loaded_module& m = s.modules[static_cast<size_t>(i)];
    if (m.desc->pcontrol != nullptr) {
      tls.layer = own_calls_layer(s, static_cast<size_t>(i));
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
  if (!strata::core::in_mpi_library(strata::core::tls))
    strata::core::pcontrol(level);
  return real_pcontrol != nullptr ? real_pcontrol(level) : MPI_SUCCESS;
}
extern "C" STRATA_EXPORT int PMPI_Pcontrol(const int level, ...)
    __attribute__((alias("MPI_Pcontrol")));
extern "C" STRATA_EXPORT int ZMPI_Pcontrol(const int level, ...)
    __attribute__((alias("MPI_Pcontrol")));
