#include "launch/interpreter.hpp"
#include "common/exec_argv.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>

extern char** environ;

namespace strata::launch {

namespace {

// Asks the interpreter without starting MPI: finding the spec imports the mpi4py package (pure
// Python) but not its MPI extension.
constexpr const char* probe_code = "import importlib.util as u\n"
                                   "try:\n"
                                   "    s = u.find_spec('mpi4py.MPI')\n"
                                   "except Exception:\n"
                                   "    s = None\n"
                                   "print(s.origin if s is not None and s.origin else '')\n";

// Whether the Python program the arguments name (a script, `-m MODULE` or `-c CODE`, after the
// interpreter's own options) imports mpi4py, without running it: the program's text first, then
// the standard library's modulefinder over its imports (the modules they import, and so on).
// Prints "yes", "no" or "unknown".
constexpr const char* imports_code = R"(import sys, os, importlib.util, modulefinder, sysconfig
args, path, code, i = sys.argv[1:], None, None, 0
while i < len(args):
    x = args[i]
    if x in ('-c', '-m') and i + 1 < len(args):
        x = x + args[i + 1]
    if x.startswith('-c'):
        code = x[2:]
        break
    if x.startswith('-m'):
        spec = importlib.util.find_spec(x[2:])
        if spec is not None and spec.submodule_search_locations:
            spec = importlib.util.find_spec(x[2:] + '.__main__')
        path = spec.origin if spec is not None else None
        break
    if x in ('-W', '-X'):
        i += 2
        continue
    if x.startswith('-'):
        i += 1
        continue
    path = x
    sys.path.insert(0, os.path.dirname(os.path.abspath(x)))
    break
if code is None and path is None:
    print('unknown')
    sys.exit()
text = code if code is not None else open(path, errors='replace').read()
if 'mpi4py' in text:
    print('yes')
    sys.exit()
class Finder(modulefinder.ModuleFinder):
    # The standard library never imports mpi4py: its modules are listed, not read.
    stdlib = os.path.realpath(sysconfig.get_paths()['stdlib']) + os.sep
    def load_module(self, fqname, fp, pathname, file_info):
        where = os.path.realpath(pathname or '')
        if where.startswith(self.stdlib) and 'packages' + os.sep not in where:
            return self.add_module(fqname)
        return super().load_module(fqname, fp, pathname, file_info)
finder = Finder()
if code is None:
    finder.run_script(path)
else:
    finder.scan_code(compile(code, '<string>', 'exec'), finder.add_module('__main__'))
wanted = list(finder.modules) + list(finder.badmodules)  # badmodules: not found here
print('yes' if any(m.split('.')[0] == 'mpi4py' for m in wanted) else 'no')
)";

int64_t now_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// The child's standard output, read until it closes or the time is up (then the child is
// killed); its exit status in `status`, -1 if it had to be killed.
std::string output_of(std::vector<std::string> args, int timeout_ms, int& status,
                      std::string& error) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    error = "cannot create a pipe";
    return {};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> argv = exec_argv(args);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    error = "cannot run " + args[0];
    return {};
  }
  std::string out;
  const int64_t deadline = now_ms() + timeout_ms;
  bool timed_out = false;
  for (;;) {
    const int64_t left = deadline - now_ms();
    pollfd p{fds[0], POLLIN, 0};
    const int ready = left > 0 ? ::poll(&p, 1, static_cast<int>(left)) : 0;
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0) {
      timed_out = true;
      break;
    }
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out)
    ::kill(pid, SIGKILL);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  status = timed_out ? -1 : (WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
  if (timed_out) {
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.1f", timeout_ms / 1000.0);
    error = args[0] + " did not answer within " + seconds + " s";
  }
  return out;
}

std::string trimmed(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos)
    return {};
  const size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

std::string basename_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

constexpr const char* say_mpi = "; say which MPI it uses with --mpi openmpi|mpich";

} // namespace

std::vector<std::string> shebang(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  if (!in || !std::getline(in, line) || line.rfind("#!", 0) != 0)
    return {};
  // The kernel's rule: the interpreter, then at most one argument (the rest of the line).
  const std::string rest = trimmed(line.substr(2));
  if (rest.empty())
    return {};
  const size_t space = rest.find_first_of(" \t");
  if (space == std::string::npos)
    return {rest};
  return {rest.substr(0, space), trimmed(rest.substr(space))};
}

bool is_python(const elf_dynamic& elf) {
  const bool linked_in =
      std::find(elf.exported.begin(), elf.exported.end(), "Py_BytesMain") != elf.exported.end();
  return linked_in ||
         std::any_of(elf.libraries.begin(), elf.libraries.end(),
                     [](const std::string& lib) { return lib.rfind("libpython3", 0) == 0; });
}

std::string mpi4py_extension(const std::string& python, std::string& error, int timeout_ms) {
  int status = 0;
  std::string why;
  std::string out = trimmed(output_of({python, "-c", probe_code}, timeout_ms, status, why));
  if (!why.empty()) {
    error = why;
    return {};
  }
  if (status != 0 || out.empty() || out.find('\n') != std::string::npos) {
    error = "cannot import mpi4py";
    return {};
  }
  return out;
}

namespace {

// The program that runs `path`: `path` itself, or a script's interpreter. "" when a script's
// interpreter is not on PATH (`error` says so).
std::string program_running(const std::string& path, const char* path_env, std::string& subject,
                            std::string& error) {
  subject = path;
  const std::vector<std::string> interpreter = shebang(path);
  if (interpreter.empty())
    return path;
  // "#!/usr/bin/env python3": the interpreter is the argument, found on PATH.
  std::string program = interpreter[0];
  if (basename_of(program) == "env" && interpreter.size() == 2 && interpreter[1][0] != '-')
    program = resolve_program(interpreter[1], path_env);
  if (program.empty())
    error = path + " is a script for " + interpreter.back() + ", which is not on PATH";
  else
    subject = path + " (a script for " + program + ")";
  return program;
}

} // namespace

python_imports python_imports_mpi4py(const std::string& path,
                                     const std::vector<std::string>& arguments,
                                     const char* path_env, int timeout_ms) {
  std::string subject;
  std::string error;
  const std::string program = program_running(path, path_env, subject, error);
  if (program.empty())
    return python_imports::unknown;
  std::vector<std::string> args{program, "-c", imports_code};
  if (program != path) // a script: the interpreter's arguments start with it
    args.push_back(path);
  args.insert(args.end(), arguments.begin(), arguments.end());
  int status = 0;
  std::string why;
  const std::string out = trimmed(output_of(args, timeout_ms, status, why));
  if (!why.empty() || status != 0)
    return python_imports::unknown;
  if (out == "yes")
    return python_imports::yes;
  return out == "no" ? python_imports::no : python_imports::unknown;
}

bool runs_python(const std::string& path, const char* path_env) {
  std::string subject;
  std::string error;
  const std::string program = program_running(path, path_env, subject, error);
  return !program.empty() && is_python(read_elf_dynamic(program));
}

std::string flavor_of_command(const std::string& path, const char* path_env, std::string& error) {
  std::string subject; // what a message is about
  const std::string program = program_running(path, path_env, subject, error);
  if (program.empty()) {
    error += say_mpi;
    return {};
  }
  const elf_dynamic elf = read_elf_dynamic(program);
  if (!elf.error.empty()) {
    error = elf.error + say_mpi;
    return {};
  }
  if (std::string flavor = flavor_of_libraries(elf.libraries); !flavor.empty())
    return flavor;
  if (!is_python(elf)) {
    error = subject +
            (elf.defines_mpi_start || elf.carries_mpi_library
                 ? " has its MPI library linked in, which no preloaded core can see"
                 : " is not linked against Open MPI or MPICH") +
            say_mpi;
    return {};
  }
  if (program == path)
    subject = path + " (Python)";
  const std::string extension = mpi4py_extension(program, error);
  if (extension.empty()) {
    error = subject + ": " + error + say_mpi;
    return {};
  }
  const elf_dynamic module = read_elf_dynamic(extension);
  std::string flavor = module.error.empty() ? flavor_of_libraries(module.libraries) : "";
  if (flavor.empty())
    error =
        subject + ": mpi4py's " + extension + " is not linked against Open MPI or MPICH" + say_mpi;
  return flavor;
}

} // namespace strata::launch
