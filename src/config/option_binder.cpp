#include "config/option_binder.hpp"

#include "config/options.hpp"

#include <strata/module.h>

#include <optional>
#include <utility>

namespace strata::config {

struct option_binder::table {
  std::vector<strata_option> declarations;
  strata_module_options list{};
};

option_binder::option_binder() : table_(std::make_shared<table>()) {}

option_binder& option_binder::add(const char* key, const char* type, const char* default_value,
                                  const char* help, const char* env, binding b) {
  table_->declarations.push_back({key, type, default_value, help, env});
  bindings_.push_back(std::move(b));
  return *this;
}

option_binder& option_binder::add_uint(const char* key, std::uint64_t& field,
                                       const char* default_value, const char* help,
                                       std::uint64_t min, std::uint64_t max, const char* env) {
  return add(key, "uint", default_value, help, env,
             {[&field, min, max](std::string_view value) -> std::string {
               const std::optional<std::uint64_t> n = parse_uint(value);
               if (n && *n >= min && *n <= max) {
                 field = *n;
                 return {};
               }
               if (max == UINT64_MAX)
                 return "is not a whole number of at least " + std::to_string(min);
               return "is not from " + std::to_string(min) + " to " + std::to_string(max);
             }});
}

option_binder& option_binder::add_bool(const char* key, bool& field, const char* default_value,
                                       const char* help, const char* env) {
  return add(key, "bool", default_value, help, env,
             {[&field](std::string_view value) -> std::string {
               const std::optional<bool> on = parse_bool(value);
               if (!on)
                 return "is not 1, 0, true, false, yes, no, on or off";
               field = *on;
               return {};
             }});
}

option_binder& option_binder::add_string(const char* key, std::string& field,
                                         const char* default_value, const char* help,
                                         const char* env) {
  return add(key, "string", default_value, help, env,
             {[&field](std::string_view value) -> std::string {
               field = value;
               return {};
             }});
}

option_binder& option_binder::add_list(const char* key, std::string& field,
                                       const char* default_value, const char* help,
                                       const char* env) {
  return add(key, "list", default_value, help, env,
             {[&field](std::string_view value) -> std::string {
               field = value;
               for (char& c : field)
                 if (c == '+')
                   c = ',';
               return {};
             }});
}

const strata_module_options* option_binder::declared() {
  table_->list = {sizeof(strata_module_options), static_cast<int>(table_->declarations.size()),
                  table_->declarations.data()};
  return &table_->list;
}

std::string option_binder::take(const strata_module_arg* args, int nargs) const {
  for (int i = 0; i < nargs; ++i) {
    const std::string_view key = args[i].key != nullptr ? args[i].key : "";
    const std::string_view value = args[i].value != nullptr ? args[i].value : "";
    std::size_t at = 0;
    const std::vector<strata_option>& declared = table_->declarations;
    while (at < declared.size() && key != declared[at].key)
      ++at;
    if (at == declared.size())
      return "unknown option '" + std::string(key) + "'";
    if (const std::string problem = bindings_[at].set(value); !problem.empty())
      return "option '" + std::string(key) + "': '" + std::string(value) + "' " + problem;
  }
  return {};
}

} // namespace strata::config
