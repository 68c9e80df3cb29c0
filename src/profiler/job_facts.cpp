#include "profiler/job_facts.hpp"
#include "profiler/slurm_job.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <map>
#include <pwd.h>
#include <unistd.h>

extern char** environ;

namespace strata::profiler {

namespace {

std::string read_proc(const char* path) {
  std::string out;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return out;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0)
    out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

void copy_nul_list(char* field, size_t size, const std::string& nul_separated) {
  const size_t n = nul_separated.size() < size - 1 ? nul_separated.size() : size - 1;
  std::copy_n(nul_separated.data(), n, field);
  std::memset(field + n, 0, size - n);
}

} // namespace

void fill_process_facts(rank_header& h, const char* mpi_flavor, const std::string& mpi_library,
                        const char* init_language) {
  h.uid = static_cast<uint32_t>(::getuid());
  h.pid = static_cast<uint32_t>(::getpid());
  passwd pw{};
  passwd* result = nullptr;
  char buf[1024];
  if (::getpwuid_r(::getuid(), &pw, buf, sizeof(buf), &result) == 0 && result != nullptr)
    copy_field(h.user, sizeof(h.user), pw.pw_name);
  else
    copy_field(h.user, sizeof(h.user), std::to_string(::getuid()));
  char host[64] = {0};
  ::gethostname(host, sizeof(host) - 1);
  copy_field(h.host, sizeof(h.host), host);
  char exe[512] = {0};
  if (::readlink("/proc/self/exe", exe, sizeof(exe) - 1) < 0)
    exe[0] = '\0';
  copy_field(h.executable, sizeof(h.executable), exe);
  copy_nul_list(h.argv, sizeof(h.argv), read_proc("/proc/self/cmdline"));
  std::string env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if ((is_mpi_variable(*e) || is_slurm_fact(*e)) &&
        env.size() + std::strlen(*e) + 1 < sizeof(h.environment))
      env.append(*e).push_back('\0');
  copy_nul_list(h.environment, sizeof(h.environment), env);
  copy_field(h.mpi_flavor, sizeof(h.mpi_flavor), mpi_flavor);
  std::string v = mpi_library;
  while (!v.empty() && (v.back() == '\n' || v.back() == '\0'))
    v.pop_back();
  copy_field(h.mpi_library, sizeof(h.mpi_library), v.substr(0, v.find('\n')));
  h.fortran = language_code(init_language);
  h.pmpi_intercepted = application_intercepts_pmpi() ? 1 : 0;
}

std::string job_id_from_environment() {
  auto env = [](const char* n) -> std::string {
    const char* v = std::getenv(n);
    return v != nullptr ? v : "";
  };
  if (std::string id = env("SLURM_JOB_ID"); !id.empty()) {
    std::map<std::string, std::string> parts;
    for (const char* name : slurm_job_id_variables)
      parts[name] = env(name);
    std::string step = env("SLURM_STEP_ID");
    if (step == "4294967291") // SLURM_BATCH_SCRIPT: mpirun in the batch script
      step = "batch";
    return "slurm:" + slurm_job_id(parts) + (step.empty() ? "" : "." + step);
  }
  if (std::string id = env("PBS_JOBID"); !id.empty())
    return "pbs:" + id;
  if (std::string id = env("LSB_JOBID"); !id.empty())
    return "lsf:" + id;
  if (std::string id = env("FLUX_JOB_ID"); !id.empty())
    return "flux:" + id;
  return {};
}

std::string local_job_id(const std::string& host, long long pid, long long start_s) {
  return "local:" + host + ":" + std::to_string(pid) + ":" + std::to_string(start_s);
}

std::string job_key(const std::string& job_id) {
  std::string key;
  for (char c : job_id)
    key.push_back(std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' ? c
                                                                                           : '_');
  return key.empty() ? std::string("job") : key;
}

bool is_mpi_variable(const char* kv) {
  static const char* const chosen[] = {"OMPI_MCA_", "MPICH_", "I_MPI_", "MPIR_CVAR_",
                                       "UCX_",      "FI_",    "HYDRA_", "STRATA_"};
  static const char* const wiring[] = {"OMPI_MCA_orte_",
                                       "OMPI_MCA_ess",
                                       "OMPI_MCA_pmix",
                                       "OMPI_MCA_initial_wdir",
                                       "OMPI_MCA_shmem_RUNTIME",
                                       "OMPI_MCA_mpi_oversubscribe",
                                       "OMPI_MCA_rmaps_base_oversubscribe"};
  auto starts = [kv](const char* prefix) {
    return std::strncmp(kv, prefix, std::strlen(prefix)) == 0;
  };
  for (const char* w : wiring)
    if (starts(w))
      return false;
  for (const char* c : chosen)
    if (starts(c))
      return true;
  return false;
}

int32_t language_code(const char* init_language) {
  using python_running_fn = int (*)();
  const auto python_running =
      reinterpret_cast<python_running_fn>(::dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  if (python_running != nullptr && python_running() != 0)
    return 2;
  return init_language != nullptr && std::strcmp(init_language, "Fortran") == 0 ? 1 : 0;
}

bool application_intercepts_pmpi() {
  void* sym = ::dlsym(RTLD_DEFAULT, "MPI_Send");
  Dl_info info{};
  link_map* owner = nullptr;
  if (sym == nullptr ||
      ::dladdr1(sym, &info, reinterpret_cast<void**>(&owner), RTLD_DL_LINKMAP) == 0)
    return false;
  return owner != nullptr && (owner->l_name == nullptr || owner->l_name[0] == '\0');
}

} // namespace strata::profiler
