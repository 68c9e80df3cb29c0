// A module's options declared once each (key, type, default, help, range, older variable
// names) and bound to the fields they set: the binder gives the core the declaration
// (strata_module_options_v1) and reads the values the core resolved into the fields at load,
// with one form of message for a value out of its option's range. No MPI.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

// include/strata/module.h's types, declared only: that header takes a module's MPI flavor from
// the <mpi.h> included before it, which a module includes after this one as often as not.
struct strata_option;
struct strata_module_arg;
struct strata_module_options;

namespace strata::config {

class option_binder {
public:
  option_binder();
  // The pointers given (key, default, help, env) must outlive the binder: string literals.
  // `help` says what the option does; a range, where one applies, is checked by take().
  option_binder& add_uint(const char* key, std::uint64_t& field, const char* default_value,
                          const char* help, std::uint64_t min = 0, std::uint64_t max = UINT64_MAX,
                          const char* env = nullptr);
  option_binder& add_bool(const char* key, bool& field, const char* default_value, const char* help,
                          const char* env = nullptr);
  option_binder& add_string(const char* key, std::string& field, const char* default_value,
                            const char* help, const char* env = nullptr);
  // A list of names: commas or '+' between them (commas separate modules in --tools), given to
  // the field with commas.
  option_binder& add_list(const char* key, std::string& field, const char* default_value,
                          const char* help, const char* env = nullptr);

  // What strata_module_options_v1 returns; valid while the binder lives and declares no more.
  const strata_module_options* declared();

  // Each argument into its field. "" when all are taken, else one line naming the option and
  // its value in the core's words ("option 'every': '0' is not from 1 to 1000"); the core adds
  // the module's name.
  // Fields of options not given keep what they hold.
  std::string take(const strata_module_arg* args, int nargs) const;

private:
  struct binding {
    // Sets the field from the value, or says why it cannot ("is not ...").
    std::function<std::string(std::string_view value)> set;
  };
  option_binder& add(const char* key, const char* type, const char* default_value, const char* help,
                     const char* env, binding b);

  struct table; // the declarations in module.h's terms (option_binder.cpp)
  std::shared_ptr<table> table_;
  std::vector<binding> bindings_;
};

} // namespace strata::config
