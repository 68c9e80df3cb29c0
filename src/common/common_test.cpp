#include "common/atomic_file.hpp"
#include "common/json_document.hpp"
#include "common/markup.hpp"
#include "common/process.hpp"
#include "common/symbols.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace strata::common;

namespace {

std::string temp_path(const std::string& name) {
  return testing::TempDir() + "/" + name + "." + std::to_string(::getpid());
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string named(const nlohmann::json& value) {
  return value.is_array() ? "an array" : value.dump();
}

} // namespace

TEST(AtomicFile, ReplacesTheFileWholeAndLeavesNoTemporary) {
  const std::string path = temp_path("atomic");
  ASSERT_EQ(write_atomically(path, "first"), "");
  ASSERT_EQ(write_atomically(path, "second", 0600), "");
  EXPECT_EQ(read_all(path), "second");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_NE(::access((path + ".tmp." + std::to_string(::getpid())).c_str(), F_OK), 0);
  std::remove(path.c_str());
}

TEST(AtomicFile, AFailureNamesTheFile) {
  const std::string path = temp_path("no-such-dir") + "/record.json";
  const std::string error = write_atomically(path, "x");
  EXPECT_EQ(error.rfind(path + ".tmp.", 0), 0u) << error;
  EXPECT_NE(error.find("No such file or directory"), std::string::npos) << error;
}

TEST(AtomicFile, MakesDirectoriesWithTheirParents) {
  const std::string top = temp_path("dirs");
  EXPECT_TRUE(make_writable_dir(top + "/a/b"));
  EXPECT_TRUE(make_writable_dir(top + "/a/b")); // already there
  EXPECT_FALSE(make_writable_dir(""));
  std::ofstream(top + "/file") << "x";
  EXPECT_FALSE(make_writable_dir(top + "/file/c")); // a file in the way
  ::chmod((top + "/file").c_str(), 0755);
  errno = 0;
  EXPECT_FALSE(make_writable_dir(top + "/file")); // a file, however writable
  EXPECT_EQ(errno, ENOTDIR);
  std::remove((top + "/file").c_str());
  ::rmdir((top + "/a/b").c_str());
  ::rmdir((top + "/a").c_str());
  ::rmdir(top.c_str());
}

TEST(JsonDocument, PrintableEscapesControlBytesAndCutsBetweenCharacters) {
  EXPECT_EQ(printable("a\nb\x7f"), "a\\x0ab\\x7f");
  EXPECT_EQ(printable("abcdef", 3), "abc...");
  // "é" is two bytes: the cut falls before it, not inside it.
  EXPECT_EQ(printable("ab\xc3\xa9z", 3), "ab\xc3\xa9...");
}

TEST(JsonDocument, EachWayTheTextIsWrongHasItsLine) {
  std::string error;
  const auto parse = [&error](std::string_view text) {
    error.clear();
    return parse_document(text, "strata.test/1", named, error);
  };
  EXPECT_FALSE(parse(" \n"));
  EXPECT_EQ(error, "not JSON: the text is empty");
  EXPECT_FALSE(parse("{\"schema\":"));
  EXPECT_EQ(error, "not JSON: the text ends early at byte 10 (truncated?)");
  EXPECT_FALSE(parse("{\n  \"schema\" 1}"));
  EXPECT_EQ(error, "not JSON: syntax error at byte 14 (line 2, column 12)");
  EXPECT_FALSE(parse("[1]"));
  EXPECT_EQ(error, "top level: expected an object, got an array");
  EXPECT_FALSE(parse("{}"));
  EXPECT_EQ(error, "schema is missing (expected \"strata.test/1\")");
  EXPECT_FALSE(parse("{\"schema\":\"strata.test/2\"}"));
  EXPECT_EQ(error, "schema is \"strata.test/2\", this Strata reads strata.test/1");
  EXPECT_FALSE(parse("{\"schema\":1e999}"));
  EXPECT_EQ(error, "not JSON: a number is out of range");
  const auto doc = parse("{\"schema\":\"strata.test/1\",\"x\":2}");
  ASSERT_TRUE(doc) << error;
  EXPECT_EQ((*doc)["x"], 2);
  EXPECT_EQ(error, "");
}

// The return address of this call lies in resolved_here(), on the line of the call.
extern "C" __attribute__((noinline)) uint64_t strata_common_test_return_address() {
  return reinterpret_cast<uint64_t>(__builtin_return_address(0));
}
extern "C" __attribute__((noinline)) uint64_t strata_common_test_caller(int* line) {
  *line = __LINE__ + 1;
  const uint64_t address = strata_common_test_return_address();
  asm volatile("" ::: "memory"); // keeps the call a call, not a jump
  return address;
}

namespace strata_common_test {
// A C++ caller: its name is given as the source writes it, not as the linker's symbol.
__attribute__((noinline)) uint64_t cpp_caller(int times) {
  const uint64_t address = strata_common_test_return_address();
  asm volatile("" ::: "memory");
  return address + static_cast<uint64_t>(times) * 0;
}
} // namespace strata_common_test

TEST(Symbols, ACppCallerIsNamedAsItsSourceNamesIt) {
  const std::vector<source_location> where =
      resolve_return_addresses({strata_common_test::cpp_caller(1)});
  ASSERT_EQ(where.size(), 1u);
  EXPECT_EQ(where[0].function, "strata_common_test::cpp_caller(int)");
}

TEST(Markup, EscapesWhatChangesHowHtmlOrXmlIsReadAndKeepsTheRest) {
  EXPECT_EQ(strata::escape_markup("<script>alert('x')</script>&\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;");
  EXPECT_EQ(strata::escape_markup("eve\x1b]0;owned\x07\x7f"), "eve\\x1b]0;owned\\x07\\x7f");
  EXPECT_EQ(strata::escape_markup("line one\n\tr\xc3\xa9sum\xc3\xa9"),
            "line one\n\tr\xc3\xa9sum\xc3\xa9");
}

TEST(Symbols, AReturnAddressNamesTheCallingFunctionAndLine) {
  int line = 0;
  const uint64_t address = strata_common_test_caller(&line);
  const std::vector<source_location> where = resolve_return_addresses({address, 0});
  ASSERT_EQ(where.size(), 2u);
  EXPECT_EQ(where[0].function, "strata_common_test_caller");
  if (where[0].file.find("+0x") == std::string::npos) { // built with line information
    EXPECT_NE(where[0].file.find("common_test.cpp"), std::string::npos) << where[0].file;
    EXPECT_EQ(where[0].line, line);
  }
  EXPECT_EQ(where[1].file, ""); // address 0: nothing to say
}

TEST(Process, ARunningProcessRunsAnExitedOneDoesNot) {
  EXPECT_TRUE(process_runs(::getpid()));
  EXPECT_FALSE(process_runs(0));
  EXPECT_FALSE(process_runs(-1));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0)
    ::_exit(0);
  // Exited, not yet reaped: a zombie, which counts as gone.
  for (int i = 0; i < 2000 && process_runs(child); ++i)
    ::usleep(1000);
  EXPECT_FALSE(process_runs(child));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(process_runs(child));
}
