// `strata exec`/`run` check the stack with the very code MPI_Init uses, before they start the
// program, and `strata modules` describes each module. Neither initialises MPI.
#include "core/probe.h"
#include "core/core_internal.hpp"

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>

extern "C" STRATA_EXPORT int strata_core_probe(const char* name, const char* origin, int nargs,
                                               const char* const* keys, const char* const* values,
                                               int app_ranks, strata_probe* out) {
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
  if (error.empty())
    error = core::resolve_module_options(m, spec);
  if (error.empty()) {
    std::string options;
    for (const config::option_decl& o : m.options) {
      std::string variables = config::option_variable(m.name, o.key);
      for (const std::string& older : o.env)
        variables += "," + older;
      options += o.key + "\t" + o.type + "\t" + o.default_value.value_or("") + "\t" + variables +
                 "\t" + o.help + "\n";
    }
    std::snprintf(out->options, sizeof(out->options), "%s", options.c_str());
    core::ask_takes_ranks(m, spec);
    out->takes_ranks = m.takes_ranks ? 1 : 0;
    if (auto extra = reinterpret_cast<strata_module_extra_ranks_entry>(
            ::dlsym(m.handle, STRATA_MODULE_EXTRA_RANKS_SYMBOL));
        extra != nullptr && m.takes_ranks && app_ranks > 0) {
      std::vector<strata_module_arg> args;
      for (const auto& [k, v] : spec.args)
        args.push_back({k.c_str(), v.c_str()});
      out->extra_ranks = extra(args.data(), static_cast<int>(args.size()), app_ranks);
    }
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
    core::host_api.set_value("strata.probe", "1");
    const int rc = m.desc->load == nullptr ? 0
                                           : m.desc->load(&core::host_api, 0, args.data(),
                                                          static_cast<int>(args.size()), &st,
                                                          reason, sizeof(reason) - 1);
    core::host_api.set_value("strata.probe", "0");
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
