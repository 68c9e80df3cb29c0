// The MPI_T section of synthetic records (`strata site synth --mpi-t`), shaped like what the
// profile module records for a job under Debian 12's Open MPI 4.1: about 300 control variables
// with short values, 16 of them set by the launcher's environment (5 of which name the launch:
// job id, daemon addresses, session directory), and 18 performance variables of which 3 are
// read (the others bound to windows or to a transport that is not in use). What a site's store
// does with a real job's section, it does with these: the same count of rows and about the
// same bytes.
#include "site/synth.hpp"

#include <fmt/format.h>

#include <array>
#include <random>

namespace strata::site {

namespace {

// Component prefixes with how many control variables each lists, as Open MPI 4.1 does.
struct family {
  const char* prefix;
  int count;
};
constexpr std::array<family, 12> families = {{{"coll_tuned", 72},
                                              {"btl_tcp", 32},
                                              {"btl_vader", 22},
                                              {"oob_tcp", 17},
                                              {"btl_self", 14},
                                              {"coll_adapt", 11},
                                              {"mtl_ofi", 11},
                                              {"mca_base", 9},
                                              {"osc_rdma", 8},
                                              {"coll_libnbc", 6},
                                              {"plm_rsh", 6},
                                              {"opal_common", 3}}};
// Frameworks listed with their selection variable only (most have no value).
constexpr std::array<const char*, 54> frameworks = {
    "allocator", "backtrace", "bml",   "btl",  "coll",   "compress",   "crcp",    "crs",
    "dl",        "errmgr",    "event", "fbtl", "fcoll",  "filem",      "fs",      "grpcomm",
    "hook",      "hwloc",     "if",    "io",   "iof",    "memchecker", "memcpy",  "memory",
    "mpool",     "mtl",       "odls",  "oob",  "op",     "osc",        "patcher", "plm",
    "pmix",      "pml",       "pstat", "ras",  "rcache", "reachable",  "regx",    "rmaps",
    "rml",       "routed",    "rtc",   "rte",  "schizo", "sharedfp",   "shmem",   "snapc",
    "sstore",    "state",     "timer", "topo", "ess",    "pls"};
constexpr std::array<const char*, 16> parameters = {
    "priority",      "eager_limit",   "max_send_size",    "flags",
    "free_list_num", "free_list_max", "free_list_inc",    "latency",
    "bandwidth",     "verbose",       "rndv_eager_limit", "segment_size",
    "algorithm",     "fanout",        "chain_fanout",     "put_limit"};
constexpr std::array<const char*, 8> values = {
    "0", "1", "-1", "4096", "65536", "131072", "18446744073709551615", ""};

struct pvar_shape {
  const char* name;
  const char* var_class;
  const char* binding;
  const char* description;
  int read; // 0: not read, 1: one value, 2: one per peer
};
constexpr const char* window_reason = "bound to a window, of which the profile holds none";
constexpr const char* transport_reason =
    "its component (an MTL) is not in use: Open MPI would crash binding it";
constexpr std::array<pvar_shape, 18> pvars = {{
    {"mpool_hugepage_bytes_allocated", "size", "none",
     "Number of bytes currently allocated in the mpool hugepage component", 1},
    {"pml_ob1_unexpected_msgq_length", "size", "communicator",
     "Number of unexpected messages received by each peer in a communicator", 2},
    {"pml_ob1_posted_recvq_length", "size", "communicator",
     "Number of unmatched receives posted for each peer in a communicator", 2},
    {"osc_rdma_put_retry_count", "counter", "window",
     "Number of times put transaction were retried due to resource limitations", 0},
    {"osc_rdma_get_retry_count", "counter", "window",
     "Number of times get transaction were retried due to resource limitations", 0},
    {"mtl_psm2_rx_user_bytes", "counter", "none", "Bytes received into a matched user buffer", 0},
    {"mtl_psm2_rx_user_num", "counter", "none", "Messages received into a matched user buffer", 0},
    {"mtl_psm2_rx_sys_bytes", "counter", "none", "Bytes received into an unmatched system buffer",
     0},
    {"mtl_psm2_rx_sys_num", "counter", "none", "Messages received into an unmatched system buffer",
     0},
    {"mtl_psm2_tx_num", "counter", "none", "Total Messages transmitted (shm and hfi)", 0},
    {"mtl_psm2_tx_eager_num", "counter", "none", "Messages transmitted eagerly", 0},
    {"mtl_psm2_tx_eager_bytes", "counter", "none", "Bytes transmitted eagerly", 0},
    {"mtl_psm2_tx_rndv_num", "counter", "none", "Messages transmitted using expected TID mechanism",
     0},
    {"mtl_psm2_tx_rndv_bytes", "counter", "none", "Bytes transmitted using expected TID mechanism",
     0},
    {"mtl_psm2_tx_shm_num", "counter", "none", "Messages transmitted (shm only)", 0},
    {"mtl_psm2_rx_shm_num", "counter", "none", "Messages received through shm", 0},
    {"mtl_psm2_rx_sysbuf_num", "counter", "none", "Number of system buffers allocated", 0},
    {"mtl_psm2_rx_sysbuf_bytes", "counter", "none", "Bytes allocated for system buffers", 0},
}};

} // namespace

record::mpi_t_section synth_mpi_t(std::uint64_t job_seed, int ranks, int user) {
  std::mt19937_64 rng(job_seed ^ 0x6d70695f74ull);
  record::mpi_t_section s;
  s.pvars_exposed = 46;
  s.cvars_exposed = 1116;
  for (const char* f : frameworks)
    s.cvars[f] = "";
  for (const family& f : families)
    for (int i = 0; i < f.count; ++i) {
      const char* parameter = parameters[static_cast<size_t>(i) % parameters.size()];
      const std::string name = i < static_cast<int>(parameters.size())
                                   ? fmt::format("{}_{}", f.prefix, parameter)
                                   : fmt::format("{}_{}_{}", f.prefix, parameter,
                                                 i / static_cast<int>(parameters.size()));
      // The value depends on the name only: every job of the installation has the same.
      s.cvars[name] = values[std::hash<std::string>{}(name) % values.size()];
    }
  // What the launcher sets in every job's environment; the first five name the launch.
  const auto job = rng() % 100000000;
  const std::string uri = fmt::format("{}.0;tcp://10.{}.{}.{}:{}", job, rng() % 4, rng() % 256,
                                      rng() % 256, 30000 + rng() % 30000);
  const std::array<std::pair<std::string, std::string>, 16> environment = {{
      {"ess_base_jobid", std::to_string(job + 1)},
      {"orte_hnp_uri", uri},
      {"orte_local_daemon_uri", uri},
      {"orte_jobfam_session_dir",
       fmt::format("/tmp/ompi.node{}.0/pid.{}", rng() % 512, rng() % 4000000)},
      {"orte_parent_uri", uri},
      {"orte_tmpdir_base", "/tmp"},
      {"orte_top_session_dir", "/tmp/ompi.node.0"},
      {"orte_app_num", "0"},
      {"orte_num_nodes", std::to_string(std::max(1, ranks / 32))},
      {"orte_ess_node_rank", "0"},
      {"ess", "pmi"},
      {"ess_base_vpid", "0"},
      {"orte_ess_num_procs", std::to_string(ranks)},
      {"pmix", "^s1,s2,cray,isolated"},
      {"btl_vader_single_copy_mechanism", "none"},
      // A setting some users choose: a few distinct sets across the site.
      {"btl_vader_eager_limit", user % 5 == 0 ? "16384" : (user % 7 == 0 ? "65536" : "4096")},
  }};
  for (const auto& [name, value] : environment) {
    s.cvars[name] = value;
    s.cvars_set.push_back(name);
  }
  const auto n = static_cast<std::uint64_t>(ranks);
  for (const pvar_shape& p : pvars) {
    record::mpi_t_pvar v;
    v.name = p.name;
    v.description = p.description;
    v.var_class = p.var_class;
    v.binding = p.binding;
    v.datatype = p.read == 2 ? "unsigned" : "unsigned long";
    if (p.read == 0) {
      v.unread = std::string_view(p.binding) == "window" ? window_reason : transport_reason;
    } else {
      v.elements = p.read == 2 ? n : 1;
      v.ranks = n;
      const std::uint64_t high = rng() % 64;
      v.sum.value = high * n / 2;
      v.min.value = std::uint64_t{0};
      v.max.value = high;
      v.max_rank = rng() % n;
    }
    s.pvars.push_back(std::move(v));
  }
  return s;
}

} // namespace strata::site
