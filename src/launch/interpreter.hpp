// Which MPI a program uses when the program is not itself linked against MPI: a script (its "#!"
// interpreter decides) or a Python interpreter (the MPI that mpi4py's extension module is
// linked against). No MPI here.
#pragma once

#include "launch/launch.hpp"

#include <string>
#include <vector>

namespace strata::launch {

// The interpreter a script names on its "#!" line, with its one optional argument; empty when
// the file does not start with "#!". "/usr/bin/env NAME" is kept as written.
std::vector<std::string> shebang(const std::string& path);

// Whether an ELF program is a CPython interpreter: it exports Py_BytesMain (the interpreter
// linked in, as Debian builds it) or needs libpython3.X.
bool is_python(const elf_dynamic& elf);

// Where `python` would import mpi4py's extension module from (mpi4py.MPI), asked of the
// interpreter itself in this process's environment (PYTHONPATH, virtual environments), within
// `timeout_ms`. "" with `error` set when it cannot import mpi4py or does not answer.
std::string mpi4py_extension(const std::string& python, std::string& error, int timeout_ms = 20000);

// Whether the Python program `path` runs imports mpi4py: `path` is the interpreter (then
// `arguments`, what follows it on the command line, name the program: options, then a script,
// `-m MODULE` or `-c CODE`) or a script for one (`arguments` are the script's). Read from the
// program's text and the modules it imports (the standard library's modulefinder, which reads
// them without running them), asked of the interpreter within `timeout_ms`; `unknown` when it
// cannot tell in time.
enum class python_imports { yes, no, unknown };
python_imports python_imports_mpi4py(const std::string& path,
                                     const std::vector<std::string>& arguments,
                                     const char* path_env, int timeout_ms = 10000);

// Whether `path` is a Python interpreter or a script for one.
bool runs_python(const std::string& path, const char* path_env);

// The MPI flavor of a command: an ELF program's own (flavor_of_program), a Python interpreter's
// mpi4py's, or for a script its interpreter's (one "#!" level, "/usr/bin/env NAME" looked up on
// `path_env`). "" with `error` saying why.
std::string flavor_of_command(const std::string& path, const char* path_env, std::string& error);

} // namespace strata::launch
