// A filter plug-in for the tests: counts the ranks of each round (one phase).
#include "monitor/filter.hpp"
#include "monitor/wire.hpp"

#include <string>

namespace {
class rank_count_filter final : public strata::overlay::filter {
public:
  const char* name() const override { return "rank_count"; }
  std::string leaf(const strata::overlay::rank_profile&) const override {
    strata::overlay::wire_writer w;
    w.u64(1);
    return w.take();
  }
  std::string merge(const std::vector<std::string>& parts) const override {
    uint64_t total = 0;
    for (const std::string& p : parts)
      total += strata::overlay::wire_reader(p).u64();
    strata::overlay::wire_writer w;
    w.u64(total);
    return w.take();
  }
  std::string render(const std::string& root_a, const std::string*) const override {
    return "{\"counted\":" + std::to_string(strata::overlay::wire_reader(root_a).u64()) + "}";
  }
};

int filters_made = 0;
} // namespace

extern "C" __attribute__((visibility("default"))) strata::overlay::filter*
strata_overlay_filter_v1(const strata::overlay::filter_options* options, std::string* error) {
  if (options != nullptr && options->count("refuse") != 0) {
    *error = "rank_count: refused as asked";
    return nullptr;
  }
  ++filters_made;
  return new rank_count_filter();
}

// How many filters this plug-in made: the tests see that the module's options make one.
extern "C" __attribute__((visibility("default"))) int strata_test_plugin_filters_made() {
  return filters_made;
}
