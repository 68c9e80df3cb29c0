#include "launch/launch.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace strata::launch;

TEST(Flavor, FromLibrarySonames) {
  EXPECT_EQ(flavor_of_library("libmpi.so.40"), "openmpi");
  EXPECT_EQ(flavor_of_library("libmpi_mpifh.so.40"), "openmpi");
  EXPECT_EQ(flavor_of_library("libmpich.so.12"), "mpich");
  EXPECT_EQ(flavor_of_library("libmpichfort.so.12"), "mpich");
  EXPECT_EQ(flavor_of_library("libc.so.6"), "");
}

TEST(Flavor, FromAProgramsDependencies) {
  std::string error;
  // /bin/sh is an ELF program linked against libc only.
  EXPECT_EQ(flavor_of_program("/bin/sh", error), "");
  EXPECT_NE(error.find("is not linked against Open MPI or MPICH"), std::string::npos);
  const std::string text = testing::TempDir() + "/not-elf";
  std::ofstream(text) << "#!/bin/sh\n";
  EXPECT_EQ(flavor_of_program(text, error), "");
  EXPECT_NE(error.find("not an ELF executable"), std::string::npos);
  EXPECT_EQ(flavor_of_program("/no/such/file", error), "");
  EXPECT_NE(error.find("cannot open"), std::string::npos);
}

TEST(Flavor, FromTheLaunchersEnvironment) {
  EXPECT_EQ(flavor_of_launcher([](const char* n) -> const char* {
              return std::string(n) == "OMPI_COMM_WORLD_SIZE" ? "4" : nullptr;
            }),
            "openmpi");
  EXPECT_EQ(flavor_of_launcher([](const char* n) -> const char* {
              return std::string(n) == "PMI_RANK" ? "0" : nullptr;
            }),
            "mpich");
  EXPECT_EQ(flavor_of_launcher([](const char*) -> const char* { return nullptr; }), "");
}

TEST(Launcher, AddsWhatALocalRunNeeds) {
  EXPECT_EQ(launcher_command("openmpi", 4, true, 2),
            (std::vector<std::string>{"mpirun.openmpi", "--allow-run-as-root", "--oversubscribe",
                                      "-np", "4"}));
  EXPECT_EQ(launcher_command("openmpi", 2, false, 2),
            (std::vector<std::string>{"mpirun.openmpi", "-np", "2"}));
  EXPECT_EQ(launcher_command("mpich", 8, true, 2),
            (std::vector<std::string>{"mpirun.mpich", "-np", "8"}));
}

TEST(Launcher, EnvironmentForTheRanksOnly) {
  EXPECT_EQ(rank_environment("openmpi", "LD_PRELOAD", "/a/libstrata.so:/b/x.so"),
            (std::vector<std::string>{"-x", "LD_PRELOAD=/a/libstrata.so:/b/x.so"}));
  EXPECT_EQ(rank_environment("mpich", "PYTHONPATH", "/p"),
            (std::vector<std::string>{"-genv", "PYTHONPATH", "/p"}));
}

TEST(Paths, LayoutProgramAndPreload) {
  EXPECT_EQ(find_layout("/opt/strata/bin/strata").core_library("mpich"),
            "/opt/strata/lib/strata/mpich/libstrata.so");
  EXPECT_EQ(find_layout("/opt/strata/bin/strata").module_dir("openmpi"),
            "/opt/strata/lib/strata/openmpi/modules");
  EXPECT_EQ(resolve_program("sh", "/nonexistent:/bin"), "/bin/sh");
  EXPECT_EQ(resolve_program("no-such-program-here", "/bin"), "");
  EXPECT_EQ(preload_value("/x/libstrata.so", nullptr), "/x/libstrata.so");
  EXPECT_EQ(preload_value("/x/libstrata.so", "/y/libz.so"), "/x/libstrata.so:/y/libz.so");
  EXPECT_EQ(find_layout("/opt/strata/bin/strata").python_dir(), "/opt/strata/lib/strata/python");
  EXPECT_EQ(python_path_value("/s/python", nullptr), "/s/python");
  EXPECT_EQ(python_path_value("/s/python", ""), "/s/python");
  EXPECT_EQ(python_path_value("/s/python", "/mine"), "/mine:/s/python");
}

TEST(Waits, ToolRanksOnAFullMachineLeaveTheApplicationPolling) {
  // 2 application ranks + 1 tool rank on 2 cores: Open MPI would make every rank yield.
  const wait_plan full = plan_waits("openmpi", 2, 1, 2, nullptr);
  EXPECT_EQ(full.environment,
            (std::vector<std::pair<std::string, std::string>>{{"OMPI_MCA_mpi_yield_when_idle", "0"},
                                                              {"STRATA_TOOL_RANKS_FROM", "2"}}));
  EXPECT_EQ(full.announcement,
            "2 application ranks + 1 tool rank on 2 cores: the application's ranks keep Open "
            "MPI's busy polling (OMPI_MCA_mpi_yield_when_idle=0), only the tool ranks yield when "
            "idle; the tool ranks sleep between probes");
  // Nothing to change: no tool ranks, room for all, the application alone oversubscribes, the
  // user's own setting, MPICH.
  EXPECT_EQ(plan_waits("openmpi", 2, 0, 2, nullptr).announcement, "");
  for (const wait_plan& p :
       {plan_waits("openmpi", 2, 1, 4, nullptr), plan_waits("openmpi", 4, 3, 2, nullptr),
        plan_waits("openmpi", 2, 1, 2, "1"), plan_waits("mpich", 2, 1, 2, nullptr)})
    EXPECT_TRUE(p.environment.empty()) << p.announcement;
  EXPECT_NE(plan_waits("openmpi", 2, 1, 4, nullptr).announcement.find("no core shared"),
            std::string::npos);
  EXPECT_NE(plan_waits("openmpi", 4, 3, 2, nullptr).announcement.find("alone oversubscribes"),
            std::string::npos);
  EXPECT_NE(plan_waits("openmpi", 2, 1, 2, "1").announcement.find("=1 left as set"),
            std::string::npos);
  EXPECT_NE(plan_waits("mpich", 2, 1, 2, nullptr).announcement.find("MPICH"), std::string::npos);
}

TEST(Waits, OnlyTheToolRanksYield) {
  static const char* world_rank = nullptr;
  static const char* from = "2";
  auto env = [](const char* n) -> const char* {
    const std::string name(n);
    return name == "OMPI_COMM_WORLD_RANK"     ? world_rank
           : name == "STRATA_TOOL_RANKS_FROM" ? from
                                              : nullptr;
  };
  const std::vector<std::pair<std::string, std::string>> yields{
      {"OMPI_MCA_mpi_yield_when_idle", "1"}};
  for (const char* r : {"0", "1"}) {
    world_rank = r;
    EXPECT_TRUE(tool_rank_environment(env).empty()) << r;
  }
  for (const char* r : {"2", "7"}) {
    world_rank = r;
    EXPECT_EQ(tool_rank_environment(env), yields) << r;
  }
  world_rank = nullptr; // not under Open MPI's launcher
  EXPECT_TRUE(tool_rank_environment(env).empty());
  world_rank = "3";
  from = "two"; // not a number: nothing planned
  EXPECT_TRUE(tool_rank_environment(env).empty());
}

TEST(Paths, AnInstallationMissingAFlavorSaysWhichItHas) {
  const std::string prefix = testing::TempDir() + "/strata-prefix-openmpi-only";
  std::filesystem::create_directories(prefix + "/bin");
  const layout l = find_layout(prefix + "/bin/strata");
  EXPECT_TRUE(l.flavors().empty());
  EXPECT_NE(l.missing_flavor("openmpi").find("(it has no MPI flavor)"), std::string::npos);
  std::filesystem::create_directories(prefix + "/lib/strata/openmpi");
  std::ofstream(l.core_library("openmpi")) << "";
  EXPECT_EQ(l.flavors(), std::vector<std::string>{"openmpi"});
  EXPECT_EQ(l.missing_flavor("openmpi"), "");
  EXPECT_EQ(l.missing_flavor("mpich"),
            "this Strata (" + prefix +
                ") was built without mpich (it has openmpi): build Strata "
                "where mpicc.mpich is found, or install its mpich part");
  std::filesystem::remove_all(prefix);
}

TEST(Limits, AJobTooLargeForThisMachineIsRefusedWithTheReason) {
  const auto none = [](const char*) -> const char* { return nullptr; };
  EXPECT_EQ(too_many_processes(128, 2, 0, none), "");
  EXPECT_EQ(too_many_processes(100000, 2, 0, none),
            "100000 processes on this machine's 2 cores (at most 128, 64 a core, in a job on one "
            "machine); start a larger job through a batch system, or with mpirun -np N strata "
            "exec ...");
  EXPECT_EQ(too_many_processes(129, 2, 0, none).substr(0, 33), "129 processes on this machine's 2");
  EXPECT_EQ(too_many_processes(100, 2, 50, none),
            "100 processes over this user's process limit (50, ulimit -u); start a larger job "
            "through a batch system, or with mpirun -np N strata exec ...");
  // Inside an allocation the launcher places the processes on its nodes.
  const auto slurm = [](const char* name) -> const char* {
    return std::string(name) == "SLURM_JOB_ID" ? "42" : nullptr;
  };
  EXPECT_EQ(too_many_processes(100000, 2, 0, slurm), "");
}
