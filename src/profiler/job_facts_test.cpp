#include "profiler/job_facts.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <unistd.h>

using namespace strata::profiler;

TEST(JobFacts, JobKeysAreFileNameSafe) {
  EXPECT_EQ(job_key("local:host-1:123:456"), "local_host-1_123_456");
  EXPECT_EQ(job_key("../../etc"), ".._.._etc");
  EXPECT_EQ(job_key(""), "job");
}

TEST(JobFacts, TheResourceManagersJobIdComesFirst) {
  for (const char* v : {"SLURM_JOB_ID", "SLURM_STEP_ID", "PBS_JOBID", "LSB_JOBID", "FLUX_JOB_ID"})
    ::unsetenv(v);
  EXPECT_EQ(job_id_from_environment(), "");
  ::setenv("FLUX_JOB_ID", "f5", 1);
  EXPECT_EQ(job_id_from_environment(), "flux:f5");
  ::setenv("PBS_JOBID", "12.server", 1);
  EXPECT_EQ(job_id_from_environment(), "pbs:12.server");
  ::setenv("SLURM_JOB_ID", "81234", 1);
  EXPECT_EQ(job_id_from_environment(), "slurm:81234");
  ::setenv("SLURM_STEP_ID", "2", 1);
  EXPECT_EQ(job_id_from_environment(), "slurm:81234.2");
  for (const char* v : {"SLURM_JOB_ID", "SLURM_STEP_ID", "PBS_JOBID", "FLUX_JOB_ID"})
    ::unsetenv(v);
  EXPECT_EQ(local_job_id("vm1", 4242, 1700000000), "local:vm1:4242:1700000000");
}

TEST(JobFacts, OnlyChosenMpiSettingsAreKept) {
  for (const char* kv : {"OMPI_MCA_btl=self", "MPICH_ASYNC_PROGRESS=1", "UCX_TLS=rc",
                         "STRATA_TOOLS=profile", "I_MPI_PIN=1", "FI_PROVIDER=tcp"})
    EXPECT_TRUE(is_mpi_variable(kv)) << kv;
  for (const char* kv : {"OMPI_MCA_orte_hnp_uri=1", "OMPI_MCA_ess_base_jobid=3", "OMPI_MCA_pmix=x",
                         "HOME=/root", "PATH=/bin", "OMPI_COMM_WORLD_RANK=0"})
    EXPECT_FALSE(is_mpi_variable(kv)) << kv;
}

TEST(JobFacts, TheFactsOfThisProcess) {
  ::setenv("STRATA_JOB_FACTS_TEST", "yes", 1);
  ::setenv("OMPI_MCA_orte_job_facts_test", "wiring", 1);
  rank_header h{};
  fill_process_facts(h, "openmpi", std::string("Open MPI v4.1.4, package: x\nsecond line\n\0", 42),
                     "C");
  EXPECT_EQ(h.uid, static_cast<uint32_t>(::getuid()));
  EXPECT_EQ(h.pid, static_cast<uint32_t>(::getpid()));
  EXPECT_STRNE(h.user, "");
  char host[64] = {0};
  ::gethostname(host, sizeof(host) - 1);
  EXPECT_STREQ(h.host, host);
  EXPECT_NE(std::string(h.executable).find("strata_profiler_test"), std::string::npos);
  const std::vector<std::string> argv = split_nul(h.argv, sizeof(h.argv));
  ASSERT_FALSE(argv.empty());
  EXPECT_NE(argv[0].find("strata_profiler_test"), std::string::npos);
  const std::vector<std::string> env = split_nul(h.environment, sizeof(h.environment));
  EXPECT_NE(std::find(env.begin(), env.end(), "STRATA_JOB_FACTS_TEST=yes"), env.end());
  EXPECT_EQ(std::find(env.begin(), env.end(), "OMPI_MCA_orte_job_facts_test=wiring"), env.end());
  EXPECT_STREQ(h.mpi_flavor, "openmpi");
  EXPECT_STREQ(h.mpi_library, "Open MPI v4.1.4, package: x"); // the first line
  EXPECT_EQ(h.fortran, 0);                                    // C, and no Python interpreter
  EXPECT_EQ(h.pmpi_intercepted, 0);                           // and no MPI at all
  ::unsetenv("STRATA_JOB_FACTS_TEST");
  ::unsetenv("OMPI_MCA_orte_job_facts_test");
}

// The language the program started MPI from, as the core says it; no Python interpreter here.
TEST(JobFacts, TheLanguageIsTheOneThatStartedMpi) {
  EXPECT_EQ(language_code("Fortran"), 1);
  EXPECT_EQ(language_code("C"), 0);
  EXPECT_EQ(language_code(nullptr), 0); // the core did not say
}
