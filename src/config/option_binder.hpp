// A module's options declared once each (key, type, default, help, range, older variable
// names) and bound to the fields they set: the binder gives the core the declaration
// (strata_module_options_v1), sets each field to its default as it is declared, and reads the
// values the core resolved into the fields at load, with one form of message for a value that
// its option cannot take. No MPI.
#pragma once

#include <concepts>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// include/strata/module.h's types, declared only: that header takes a module's MPI flavor from
// the <mpi.h> included before it, which a module includes after this one as often as not.
struct strata_option;
struct strata_module_arg;
struct strata_module_options;

namespace strata::config {

// The setters' checks, one per type (option_binder.cpp): the number, or why the text is not one
// ("is not from 1 to 1000").
std::optional<std::uint64_t> bound_uint(std::string_view value, std::uint64_t min,
                                        std::uint64_t max, std::string& problem);
std::optional<std::int64_t> bound_int(std::string_view value, std::int64_t min, std::int64_t max,
                                      std::string& problem);

// The arguments a module's load gets, as (key, value) texts; null pointers as empty text.
std::vector<std::pair<std::string, std::string>> argument_list(const strata_module_arg* args,
                                                               int nargs);

class option_binder {
public:
  option_binder();
  // The pointers given (key, default, help, env) must outlive the binder: string literals.
  // `help` says what the option does; a range, where one applies, is checked by take(). Each
  // field is set to the option's default here (options without one keep what the field holds).

  // A whole number >= 0 (type "uint") in [min, max] and in the field's own range.
  template <std::integral T>
  option_binder&
  add_uint(const char* key, T& field, const char* default_value, const char* help,
           std::uint64_t min = 0,
           std::uint64_t max = static_cast<std::uint64_t>(std::numeric_limits<T>::max()),
           const char* env = nullptr) {
    if (max > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
      max = static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    return add(key, "uint", default_value, help, env,
               {[&field, min, max](std::string_view value) -> std::string {
                  std::string problem;
                  if (const auto n = bound_uint(value, min, max, problem))
                    field = static_cast<T>(*n);
                  return problem;
                },
                [&field] { return static_cast<double>(field); }});
  }
  // A whole number (type "int") in [min, max].
  template <std::signed_integral T>
  option_binder& add_int(const char* key, T& field, const char* default_value, const char* help,
                         std::int64_t min, std::int64_t max, const char* env = nullptr) {
    return add(key, "int", default_value, help, env,
               {[&field, min, max](std::string_view value) -> std::string {
                  std::string problem;
                  if (const auto n = bound_int(value, min, max, problem))
                    field = static_cast<T>(*n);
                  return problem;
                },
                [&field] { return static_cast<double>(field); }});
  }
  option_binder& add_bool(const char* key, bool& field, const char* default_value, const char* help,
                          const char* env = nullptr);
  option_binder& add_string(const char* key, std::string& field, const char* default_value,
                            const char* help, const char* env = nullptr);
  // A list of names: commas or '+' between them (commas separate modules in --tools), given to
  // the field with commas and without empty names.
  option_binder& add_list(const char* key, std::string& field, const char* default_value,
                          const char* help, const char* env = nullptr);
  option_binder& add_list(const char* key, std::vector<std::string>& field,
                          const char* default_value, const char* help, const char* env = nullptr);
  // Seconds (type "duration": 2.5, 10s, 250ms, 40us, 100ns, 5m, 1h), from 0 to max_s.
  option_binder& add_duration(const char* key, double& seconds, const char* default_value,
                              const char* help,
                              double max_s = std::numeric_limits<double>::infinity(),
                              const char* env = nullptr);
  // The same for an option that took whole milliseconds before it took durations: a number
  // without a unit is still milliseconds (write_timeout_ms=10000 is 10 s, as it always was),
  // from min_s to max_s.
  option_binder& add_duration_ms(const char* key, double& seconds, const char* default_value,
                                 const char* help, double min_s,
                                 double max_s = std::numeric_limits<double>::infinity(),
                                 const char* env = nullptr);
  // Bytes (type "size": 4096, 512K, 64M, 2G) in [min, max].
  option_binder& add_size(const char* key, std::uint64_t& bytes, const char* default_value,
                          const char* help, std::uint64_t min = 0,
                          std::uint64_t max = std::numeric_limits<std::uint64_t>::max(),
                          const char* env = nullptr);
  // One of a list of names (type "enum:a|b"), each standing for a value of the field.
  template <typename T> struct choice {
    const char* name;
    T value;
  };
  template <typename T>
  option_binder& add_enum(const char* key, T& field, const char* default_value, const char* help,
                          std::initializer_list<choice<T>> choices, const char* env = nullptr) {
    std::vector<const char*> names;
    std::vector<T> values;
    for (const choice<T>& c : choices) {
      names.push_back(c.name);
      values.push_back(c.value);
    }
    return add_choice(key, default_value, help, env, names,
                      [&field, values](std::size_t at) { field = values[at]; });
  }
  // One of a list of names, kept as the name.
  option_binder& add_enum(const char* key, std::string& field, const char* default_value,
                          const char* help, std::initializer_list<const char*> names,
                          const char* env = nullptr);
  // A value of `type` that the module hands on as text (to a plug-in that reads its own
  // options): into[key] when given, nothing otherwise.
  option_binder& add_passed_on(const char* key, const char* type,
                               std::map<std::string, std::string>& into, const char* help);

  // Modifier of the option added last: an empty string, or a list without a name, is refused.
  option_binder& not_empty();
  // Between two numeric options: when `key` has a value, it must be more than `than`'s (its
  // value given or its default). `words` say how in the message ("later than").
  option_binder& require_more(const char* key, const char* than, const char* words = "more than");

  // What strata_module_options_v1 returns; valid while the binder lives and declares no more.
  const strata_module_options* declared();

  // Each argument into its field, then the checks between options. "" when all are taken, else
  // one line naming the option and its value in the core's words ("option 'every': '0' is not
  // from 1 to 1000"); the core adds the module's name. Fields of options not given keep what
  // they hold. A default that its own option refuses (a module's mistake) is that line too.
  std::string take(const strata_module_arg* args, int nargs) const;
  std::string take(const std::vector<std::pair<std::string, std::string>>& values) const;

private:
  struct binding {
    // Sets the field from the value, or says why it cannot ("is not ...").
    std::function<std::string(std::string_view value)> set;
    // The field as a number, for the checks between options; empty for text.
    std::function<double()> number;
    bool list = false;      // "names nothing" rather than "is empty"
    bool not_empty = false; // not_empty()
  };
  struct ordering {
    std::size_t key, than;
    const char* words;
  };
  option_binder& add(const char* key, const char* type, const char* default_value, const char* help,
                     const char* env, binding b);
  option_binder& add_duration_in(const char* key, double& seconds, const char* default_value,
                                 const char* help, double min_s, double max_s, double bare_unit_s,
                                 const char* env);
  option_binder& add_choice(const char* key, const char* default_value, const char* help,
                            const char* env, const std::vector<const char*>& names,
                            std::function<void(std::size_t)> set);
  std::size_t index_of(std::string_view key) const;
  std::string take_one(std::size_t at, std::string_view value) const;

  struct table; // the declarations in module.h's terms (option_binder.cpp)
  std::shared_ptr<table> table_;
  std::vector<binding> bindings_;
  std::vector<ordering> orderings_;
  std::string default_problem_; // the first default its option refused
};

} // namespace strata::config
