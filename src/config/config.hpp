// The tool stack a run asks for: parsed from --tools / STRATA_TOOLS or a config file.
// Pure logic, no MPI: shared by the `strata` command (which validates before starting the
// program) and by the core inside the program.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::config {

struct module_spec {
  std::string name; // a module name or a path to a .so
  std::vector<std::pair<std::string, std::string>> args;
  std::string origin; // "FILE:LINE" or "STRATA_TOOLS" / "--tools", for messages
};

struct stack {
  std::vector<module_spec> modules;
  std::string origin; // where the stack came from, for messages
  std::string error;  // one line naming the problem; empty when fine
  bool ok() const { return error.empty(); }
};

// "a,b:key=value:key2=value,c": modules in order, arguments after colons.
stack parse_tool_list(std::string_view text, std::string_view origin);

// A config file: one module per line, "NAME [KEY=VALUE ...]", values optionally "quoted",
// '#' starts a comment. Errors are reported as "FILE:LINE: ...".
stack parse_config(std::string_view text, std::string_view filename);

using getenv_fn = std::function<const char*(const char*)>;

// The stack for this process: STRATA_TOOLS, else the file named by STRATA_CONFIG, else
// ./.strata.conf, else ~/.strata.conf, else the site's file (STRATA_SITE_CONFIG, else
// `site_config`: the installation's etc/strata/strata.conf, which makes a stack the default
// for every job). None of them gives an empty stack. STRATA_DISABLE=1 gives an empty stack
// whatever is set: the per-job opt-out.
stack select_stack(const getenv_fn& getenv, const std::string& site_config = {});

// Directories searched for a module given by name: STRATA_MODULE_PATH (colon-separated),
// then `builtin_dir`.
std::vector<std::string> module_dirs(const getenv_fn& getenv, const std::string& builtin_dir);

// The file of a module: a name containing '/' is a path; otherwise "<dir>/<name>.so" in the
// first directory that has it. Empty when not found.
std::string find_module(const std::string& name, const std::vector<std::string>& dirs);

bool read_file(const std::string& path, std::string& contents);

} // namespace strata::config
