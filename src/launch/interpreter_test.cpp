#include "launch/interpreter.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

using namespace strata::launch;

namespace {

std::string write_file(const std::string& name, const std::string& text, bool executable) {
  const std::string path = testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  if (executable)
    ::chmod(path.c_str(), 0755);
  return path;
}

// Debian's python3 with python3-mpi4py (scripts/setup.sh installs both).
constexpr const char* debian_python = "/usr/bin/python3";

bool debian_mpi4py_present() {
  std::string error;
  return ::access(debian_python, X_OK) == 0 && !mpi4py_extension(debian_python, error).empty();
}

// PYTHONPATH for the duration of a test: a directory with a package of our own named mpi4py.
class PythonPath {
public:
  explicit PythonPath(const std::string& dir) {
    const char* old = std::getenv("PYTHONPATH");
    had_ = old != nullptr;
    if (had_)
      old_ = old;
    ::setenv("PYTHONPATH", dir.c_str(), 1);
  }
  ~PythonPath() {
    if (had_)
      ::setenv("PYTHONPATH", old_.c_str(), 1);
    else
      ::unsetenv("PYTHONPATH");
  }
  PythonPath(const PythonPath&) = delete;
  PythonPath& operator=(const PythonPath&) = delete;

private:
  bool had_ = false;
  std::string old_;
};

std::string fake_mpi4py(const std::string& name, const std::string& init_text,
                        const std::string& extension_from) {
  const std::string dir = testing::TempDir() + "/" + name;
  ::mkdir(dir.c_str(), 0755);
  ::mkdir((dir + "/mpi4py").c_str(), 0755);
  std::ofstream(dir + "/mpi4py/__init__.py") << init_text;
  if (!extension_from.empty()) {
    const std::string ext = dir + "/mpi4py/MPI.so";
    ::unlink(ext.c_str());
    EXPECT_EQ(::symlink(extension_from.c_str(), ext.c_str()), 0);
  }
  return dir;
}

} // namespace

TEST(Shebang, InterpreterAndItsOneArgument) {
  EXPECT_EQ(shebang(write_file("sh.sh", "#!/bin/sh\necho\n", true)),
            (std::vector<std::string>{"/bin/sh"}));
  EXPECT_EQ(shebang(write_file("env.py", "#!/usr/bin/env python3\n", true)),
            (std::vector<std::string>{"/usr/bin/env", "python3"}));
  EXPECT_EQ(shebang(write_file("spaced.py", "#!  /usr/bin/python3  -u -O \n", true)),
            (std::vector<std::string>{"/usr/bin/python3", "-u -O"}));
  EXPECT_TRUE(shebang(write_file("plain.txt", "print(1)\n", false)).empty());
  EXPECT_TRUE(shebang(write_file("bare.sh", "#!\n", true)).empty());
  EXPECT_TRUE(shebang("/no/such/file").empty());
}

TEST(Interpreter, PythonIsRecognisedFromItsElf) {
  EXPECT_FALSE(is_python(read_elf_dynamic("/bin/sh")));
  elf_dynamic shared;
  shared.libraries = {"libpython3.12.so.1.0", "libc.so.6"};
  EXPECT_TRUE(is_python(shared));
  elf_dynamic linked_in;
  linked_in.exported = {"Py_Initialize", "Py_BytesMain"};
  EXPECT_TRUE(is_python(linked_in));
  if (::access(debian_python, X_OK) == 0) {
    EXPECT_TRUE(is_python(read_elf_dynamic(debian_python)));
  }
}

TEST(Interpreter, PythonProgramsAndScripts) {
  EXPECT_FALSE(runs_python("/bin/sh", "/usr/bin:/bin"));
  EXPECT_FALSE(runs_python(write_file("job2.sh", "#!/bin/sh\n", true), "/usr/bin:/bin"));
  if (::access(debian_python, X_OK) != 0)
    GTEST_SKIP() << "no " << debian_python;
  EXPECT_TRUE(runs_python(debian_python, "/usr/bin:/bin"));
  EXPECT_TRUE(runs_python(write_file("direct.py", "#!/usr/bin/python3\n", true), "/bin"));
}

TEST(Interpreter, WhetherAPythonProgramImportsMpi4pyIsReadNotRun) {
  if (::access(debian_python, X_OK) != 0)
    GTEST_SKIP() << "no " << debian_python;
  const char* path = "/usr/bin:/bin";
  // A program that ran would leave this file: none of them may run.
  const std::string ran = testing::TempDir() + "/imports_ran";
  std::remove(ran.c_str());
  const std::string touch = "open('" + ran + "', 'w')\n";
  const std::string plain = write_file("plain_job.py", "import json, os\n" + touch, false);
  const std::string direct = write_file("direct_job.py", "from mpi4py import MPI\n" + touch, false);
  // Through a module of its own beside it, and from there through mpi4py's package.
  write_file("uses_mpi.py", "import mpi4py.MPI\n", false);
  const std::string indirect = write_file("indirect_job.py", "import uses_mpi\n" + touch, false);
  const std::string script =
      write_file("script_job.py", "#!/usr/bin/python3\nimport uses_mpi\n" + touch, true);
  EXPECT_EQ(python_imports_mpi4py(debian_python, {plain, "arg"}, path), python_imports::no);
  EXPECT_EQ(python_imports_mpi4py(debian_python, {"-u", plain}, path), python_imports::no);
  EXPECT_EQ(python_imports_mpi4py(debian_python, {direct}, path), python_imports::yes);
  EXPECT_EQ(python_imports_mpi4py(debian_python, {indirect}, path), python_imports::yes);
  EXPECT_EQ(python_imports_mpi4py(script, {"arg"}, path), python_imports::yes);
  EXPECT_EQ(python_imports_mpi4py(debian_python, {"-c", "import json"}, path), python_imports::no);
  EXPECT_EQ(python_imports_mpi4py(debian_python, {"-m", "json.tool"}, path), python_imports::no);
  EXPECT_EQ(python_imports_mpi4py(debian_python, {"-c", "import uses_mpi"}, path),
            python_imports::no); // -c runs in the current directory, not the test's
  EXPECT_EQ(python_imports_mpi4py(debian_python, {}, path), python_imports::unknown); // a prompt
  EXPECT_EQ(python_imports_mpi4py(debian_python, {"/no/such.py"}, path), python_imports::unknown);
  EXPECT_NE(::access(ran.c_str(), F_OK), 0);
}

TEST(Interpreter, TheProbeReadsOneLineAndIsBounded) {
  std::string error;
  const std::string answers = write_file("answers", "#!/bin/sh\necho /x/MPI.so\n", true);
  EXPECT_EQ(mpi4py_extension(answers, error), "/x/MPI.so");
  EXPECT_EQ(error, "");
  const std::string silent = write_file("silent", "#!/bin/sh\nexit 0\n", true);
  EXPECT_EQ(mpi4py_extension(silent, error), "");
  EXPECT_EQ(error, "cannot import mpi4py");
  error.clear();
  const std::string fails = write_file("fails", "#!/bin/sh\necho /x/MPI.so\nexit 3\n", true);
  EXPECT_EQ(mpi4py_extension(fails, error), "");
  EXPECT_EQ(error, "cannot import mpi4py");
  error.clear();
  const std::string hangs = write_file("hangs", "#!/bin/sh\nexec sleep 30\n", true);
  EXPECT_EQ(mpi4py_extension(hangs, error, 300), "");
  EXPECT_EQ(error, hangs + " did not answer within 0.3 s");
  error.clear();
  EXPECT_EQ(mpi4py_extension("/no/such/python", error), "");
  EXPECT_NE(error, "");
}

TEST(Command, ScriptsForOtherInterpretersNeedMpi) {
  std::string error;
  const std::string sh = write_file("job.sh", "#!/bin/sh\n./app\n", true);
  EXPECT_EQ(flavor_of_command(sh, "/usr/bin:/bin", error), "");
  EXPECT_EQ(error, sh + " (a script for /bin/sh) is not linked against Open MPI or MPICH; say "
                        "which MPI it uses with --mpi openmpi|mpich");
  const std::string lost = write_file("lost.py", "#!/usr/bin/env no-such-python\n", true);
  EXPECT_EQ(flavor_of_command(lost, "/usr/bin:/bin", error), "");
  EXPECT_EQ(error, lost + " is a script for no-such-python, which is not on PATH; say which MPI "
                          "it uses with --mpi openmpi|mpich");
  EXPECT_EQ(flavor_of_command("/bin/sh", "/usr/bin:/bin", error), "");
  EXPECT_EQ(error, "/bin/sh is not linked against Open MPI or MPICH; say which MPI it uses with "
                   "--mpi openmpi|mpich");
}

TEST(Command, PythonTakesMpi4pysMpi) {
  if (!debian_mpi4py_present())
    GTEST_SKIP() << debian_python << " cannot import mpi4py (scripts/setup.sh installs it)";
  std::string error;
  // Debian packages mpi4py for Open MPI only.
  EXPECT_EQ(flavor_of_command(debian_python, "/usr/bin:/bin", error), "openmpi") << error;
  const std::string bin = testing::TempDir() + "/pybin";
  ::mkdir(bin.c_str(), 0755);
  ::unlink((bin + "/python3").c_str());
  ASSERT_EQ(::symlink(debian_python, (bin + "/python3").c_str()), 0);
  const std::string script = write_file("app.py", "#!/usr/bin/env python3\n", true);
  EXPECT_EQ(flavor_of_command(script, bin.c_str(), error), "openmpi") << error;
}

TEST(Command, PythonWhoseMpi4pyCannotBeUsedIsNamed) {
  if (::access(debian_python, X_OK) != 0)
    GTEST_SKIP() << "no " << debian_python;
  std::string error;
  {
    PythonPath broken(fake_mpi4py("broken", "raise ImportError('no')\n", ""));
    EXPECT_EQ(flavor_of_command(debian_python, "/usr/bin:/bin", error), "");
    EXPECT_EQ(error, std::string(debian_python) +
                         " (Python): cannot import mpi4py; say which MPI it uses with --mpi "
                         "openmpi|mpich");
  }
  {
    // An extension module that needs no MPI (this very shell, as a stand-in ELF file).
    PythonPath odd(fake_mpi4py("odd", "", "/bin/sh"));
    EXPECT_EQ(flavor_of_command(debian_python, "/usr/bin:/bin", error), "");
    EXPECT_NE(error.find("mpi4py's "), std::string::npos) << error;
    EXPECT_NE(error.find("/odd/mpi4py/MPI.so is not linked against Open MPI or MPICH"),
              std::string::npos)
        << error;
  }
}
