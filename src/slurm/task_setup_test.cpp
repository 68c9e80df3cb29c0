#include "slurm/task_setup.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace strata::slurm {
namespace {

const char* no_variables(const char* /*name*/) {
  return nullptr;
}
const char* disabled(const char* name) {
  return std::string(name) == "STRATA_DISABLE" ? "1" : nullptr;
}

// An installation with both cores, in a temporary directory.
struct fake_installation : ::testing::Test {
  std::string prefix;
  void SetUp() override {
    char dir[] = "/tmp/strata-slurm-test-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    prefix = dir;
    for (const char* flavor : {"openmpi", "mpich"}) {
      const std::string d = prefix + "/lib/strata/" + flavor;
      ASSERT_EQ(std::system(("mkdir -p " + d + " && touch " + d + "/libstrata.so").c_str()), 0);
    }
  }
  void TearDown() override { std::system(("rm -rf " + prefix).c_str()); }
  launch::layout installation() const { return launch::layout{prefix}; }
};

TEST_F(fake_installation, LeavesProgramsWithoutMpiAlone) {
  const task_setup s = plan_task("true", "/usr/bin:/bin", "profile", installation(), no_variables);
  EXPECT_TRUE(s.environment.empty());
  EXPECT_NE(s.left_alone.find("not an MPI program"), std::string::npos) << s.left_alone;
}

TEST_F(fake_installation, LeavesScriptsAlone) {
  const std::string script = prefix + "/job.sh";
  FILE* f = std::fopen(script.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("#!/bin/sh\necho hi\n", f);
  std::fclose(f);
  ::chmod(script.c_str(), 0755);
  const task_setup s = plan_task(script, nullptr, "profile", installation(), no_variables);
  EXPECT_TRUE(s.environment.empty());
  EXPECT_NE(s.left_alone.find("not an ELF"), std::string::npos) << s.left_alone;
}

TEST_F(fake_installation, OffDisableAndNoStackLeaveEveryTaskAlone) {
  EXPECT_EQ(plan_task("true", nullptr, "off", installation(), no_variables).left_alone,
            "--strata=off");
  EXPECT_EQ(plan_task("true", nullptr, "profile", installation(), disabled).left_alone,
            "STRATA_DISABLE=1");
  EXPECT_NE(
      plan_task("true", nullptr, "", installation(), no_variables).left_alone.find("no stack"),
      std::string::npos);
}

TEST_F(fake_installation, MissingProgramIsNamed) {
  const task_setup s =
      plan_task("no-such-program-here", "/usr/bin", "profile", installation(), no_variables);
  EXPECT_EQ(s.left_alone, "no-such-program-here: not found");
}

TEST(StackProblem, AcceptsToolListsAndOff) {
  EXPECT_EQ(stack_problem("profile"), "");
  EXPECT_EQ(stack_problem("profile,delay:usec=5"), "");
  EXPECT_EQ(stack_problem("off"), "");
  EXPECT_NE(stack_problem(""), "");
  EXPECT_NE(stack_problem("profile,,"), "");
}

TEST_F(fake_installation, LauncherOptionsSkipOptionValuesAndDirectories) {
  // /tmp is executable (a directory), 4 is no file: the first program is `true`, no MPI.
  EXPECT_TRUE(launcher_options({"-np", "4", "-wdir", "/tmp", "true"}, "/usr/bin:/bin", "profile",
                               installation(), no_variables)
                  .empty());
}

TEST(PluginArguments, NameEachBadArgumentAndDropABadDefault) {
  const plugin_arguments good = parse_plugin_arguments({"default=profile,trace", "prefix=/opt/s"});
  EXPECT_EQ(good.default_stack, "profile,trace");
  EXPECT_EQ(good.prefix, "/opt/s");
  EXPECT_TRUE(good.errors.empty());
  const plugin_arguments bad = parse_plugin_arguments({"defualt=profile", "default=pro file:"});
  EXPECT_EQ(bad.default_stack, "");
  ASSERT_EQ(bad.errors.size(), 2U);
  EXPECT_EQ(bad.errors[0], "strata: unknown plugin argument 'defualt=profile' (default=STACK, "
                           "prefix=DIR)");
  EXPECT_EQ(bad.errors[1].rfind("strata: plugin argument default=pro file:: ", 0), 0U)
      << bad.errors[1];
  EXPECT_NE(bad.errors[1].find("; no site default"), std::string::npos) << bad.errors[1];
}

} // namespace
} // namespace strata::slurm
