// strata_monitor_dump() (include/strata/annotate.h): the core holds the exported entry point,
// since the application binds it at load time and modules are loaded privately; the monitor
// module publishes its dump as the service "monitor.dump" (signature "v1") once MPI is ready.
// Without the module the call costs one service lookup and does nothing.
#include "core/dispatch.hpp"

namespace strata::core {
inline namespace internal {
void* host_lookup(const char* name, const char* signature);
} // namespace internal
} // namespace strata::core

namespace {
struct dump_service {
  void (*dump)(void* state);
  void* state;
};
} // namespace

extern "C" STRATA_EXPORT void strata_annotate_monitor_dump(void) {
  auto* service = static_cast<const dump_service*>(strata::core::host_lookup("monitor.dump", "v1"));
  if (service != nullptr && service->dump != nullptr)
    service->dump(service->state);
}
