// The tools' life cycle over both of MPI's models. The stack starts when the application's first
// MPI_Init, MPI_Init_thread or MPI_Session_init returns, and ends in its last MPI_Finalize or
// MPI_Session_finalize (whichever of its models closes last). In between, the tools talk over
// their own communicator of the application's processes (strata_host::world): where the MPI
// library has Sessions, one made from the core's own session over "mpi://WORLD", which lives
// whatever the application does with its models; elsewhere a duplicate of MPI_COMM_WORLD.
#include "core/core_internal.hpp"
#include "core/decode.hpp"
#include "core/regions.hpp"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string_view>
#include <vector>

namespace strata::core {
inline namespace internal {
namespace {

std::atomic<bool> g_ready{false};   // the modules' mpi_ready have run (or the stack failed)
std::atomic<bool> g_stopped{false}; // the modules' finalize have run
std::atomic<bool> g_unloaded{false};
std::atomic<bool> g_active{false}; // the tools may call MPI: from mpi_ready to the end of finalize
bool g_stopped_in_this_call = false; // by the finalize whose "after" hook unloads

std::mutex g_models_lock; // the application's models: its init and finalize calls
int g_app_sessions = 0;   // the application's sessions open
bool g_world_model = false;
#if MPI_VERSION >= 4
std::vector<MPI_Session> g_open_sessions; // the application's, for end_process
MPI_Session g_finalizing_session = MPI_SESSION_NULL;
std::vector<int> g_app_world_ranks; // after replace_world: the application's processes
#endif

MPI_Comm g_tool_world = MPI_COMM_NULL;
// MPI_Comm_create_group's tag for the tools' communicator. The standard keeps its messages apart
// from point-to-point ones; Open MPI sends them on the parent communicator with this tag, between
// neighbours in a tree, inside the init call: a process receives the last of them before its
// init returns, so no receive of the application is posted yet, and a neighbour's later messages
// come after them (MPI does not let them overtake).
constexpr int tools_world_tag = 27182;
bool g_tool_world_from_session = false;
#if MPI_VERSION >= 4
MPI_Session g_tool_session = MPI_SESSION_NULL;
#endif

template <typename F> F real_fn(const char* name) {
  return reinterpret_cast<F>(find_real(name));
}

void pause_s(time_t seconds, long nanoseconds) {
  timespec pause{seconds, nanoseconds};
  while (::nanosleep(&pause, &pause) != 0) {
  }
}

// A communicator of the same processes as `comm`, for the tools' own traffic. Made with
// MPI_Comm_create_group over comm's whole group rather than MPI_Comm_dup: Open MPI's
// MPI_Comm_dup agrees on the new context id with a nonblocking allreduce on `comm`, which
// registers its nonblocking-collective component's progress function, for good, in every later
// progress call of the process (each MPI_Test, MPI_Testany, MPI_Iprobe: about 20 instructions
// and a lock), where a program that makes no communicator of its own never has it (HPCC's
// RandomAccess, docs/PERFORMANCE.md). The group variant agrees with point-to-point messages on
// `comm`, under a tag of its own, and leaves nothing behind (under MPICH neither call does).
int duplicate_for_tools(MPI_Comm comm, MPI_Comm* out) {
  auto comm_group = real_fn<int (*)(MPI_Comm, MPI_Group*)>("PMPI_Comm_group");
  auto create_group =
      real_fn<int (*)(MPI_Comm, MPI_Group, int, MPI_Comm*)>("PMPI_Comm_create_group");
  auto group_free = real_fn<int (*)(MPI_Group*)>("PMPI_Group_free");
  if (comm_group == nullptr || create_group == nullptr || group_free == nullptr)
    return MPI_ERR_INTERN;
  MPI_Group group = MPI_GROUP_NULL;
  int result = comm_group(comm, &group);
  if (result != MPI_SUCCESS)
    return result;
  result = create_group(comm, group, tools_world_tag, out);
  group_free(&group);
  return result;
}

#if MPI_VERSION >= 4
// A communicator of every process of "mpi://WORLD" from a session of the core's own.
bool tool_world_from_session() {
  auto session_init = real_fn<int (*)(MPI_Info, MPI_Errhandler, MPI_Session*)>("PMPI_Session_init");
  auto from_pset =
      real_fn<int (*)(MPI_Session, const char*, MPI_Group*)>("PMPI_Group_from_session_pset");
  auto from_group = real_fn<int (*)(MPI_Group, const char*, MPI_Info, MPI_Errhandler, MPI_Comm*)>(
      "PMPI_Comm_create_from_group");
  auto group_free = real_fn<int (*)(MPI_Group*)>("PMPI_Group_free");
  auto session_finalize = real_fn<int (*)(MPI_Session*)>("PMPI_Session_finalize");
  if (session_init == nullptr || from_pset == nullptr || from_group == nullptr)
    return false;
  if (session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &g_tool_session) != MPI_SUCCESS)
    return false;
  MPI_Group group = MPI_GROUP_NULL;
  bool ok = from_pset(g_tool_session, "mpi://WORLD", &group) == MPI_SUCCESS &&
            from_group(group, "org.strata.tools", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                       &g_tool_world) == MPI_SUCCESS;
  if (group != MPI_GROUP_NULL)
    group_free(&group);
  if (!ok) {
    session_finalize(&g_tool_session);
    g_tool_world = MPI_COMM_NULL;
  }
  return ok;
}
#endif

#if MPI_VERSION >= 4
// Which processes of the tools' world (the job's "mpi://WORLD", in its order) the application
// keeps, for narrowing its own "mpi://WORLD" groups the same way.
void remember_app_world_ranks(MPI_Comm app) {
  g_app_world_ranks.clear();
  auto comm_group = real_fn<int (*)(MPI_Comm, MPI_Group*)>("PMPI_Comm_group");
  auto group_size = real_fn<int (*)(MPI_Group, int*)>("PMPI_Group_size");
  auto translate =
      real_fn<int (*)(MPI_Group, int, const int[], MPI_Group, int[])>("PMPI_Group_translate_ranks");
  auto group_free = real_fn<int (*)(MPI_Group*)>("PMPI_Group_free");
  if (app == MPI_COMM_NULL || g_tool_world == MPI_COMM_NULL || comm_group == nullptr)
    return;
  MPI_Group mine = MPI_GROUP_NULL;
  MPI_Group all = MPI_GROUP_NULL;
  comm_group(app, &mine);
  comm_group(g_tool_world, &all);
  int size = 0;
  group_size(mine, &size);
  std::vector<int> ranks(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r)
    ranks[static_cast<size_t>(r)] = r;
  g_app_world_ranks.resize(ranks.size());
  translate(mine, size, ranks.data(), all, g_app_world_ranks.data());
  group_free(&mine);
  group_free(&all);
}

#endif

// Collective over the application's processes: every one of them starts the tools in its first
// init call. Returns an error line, or "".
std::string create_tool_world() {
#if MPI_VERSION >= 4
  if (tool_world_from_session()) {
    g_tool_world_from_session = true;
    return {};
  }
#endif
  if (!g_world_model)
    return "the MPI library gave the tools no communicator of its processes (a Sessions "
           "program under an MPI without a working mpi://WORLD process set)";
  if (duplicate_for_tools(MPI_COMM_WORLD, &g_tool_world) != MPI_SUCCESS)
    return "the MPI library refused to duplicate MPI_COMM_WORLD for the tools";
  return {};
}

void free_tool_communicator() {
  if (g_tool_world != MPI_COMM_NULL) {
    if (auto comm_free = real_fn<int (*)(MPI_Comm*)>("PMPI_Comm_free"))
      comm_free(&g_tool_world);
    g_tool_world = MPI_COMM_NULL;
  }
}

// The tools' communicator, and the core's session if it has one.
void free_tool_world() {
  free_tool_communicator();
#if MPI_VERSION >= 4
  if (g_tool_world_from_session && g_tool_session != MPI_SESSION_NULL) {
    if (auto session_finalize = real_fn<int (*)(MPI_Session*)>("PMPI_Session_finalize"))
      session_finalize(&g_tool_session);
  }
#endif
}

// A stack that could not load: rank 0 reports and its abort ends the job.
[[noreturn]] void fail_the_job(const std::string& error) {
  using rank_fn = int (*)(MPI_Comm, int*);
  using abort_fn = int (*)(MPI_Comm, int);
  const MPI_Comm comm = g_tool_world != MPI_COMM_NULL ? g_tool_world : MPI_COMM_WORLD;
  int rank = 0;
  if (auto comm_rank = real_fn<rank_fn>("PMPI_Comm_rank"))
    comm_rank(comm, &rank);
  // Every rank reads the same configuration, so rank 0 fails too: it reports and its abort
  // ends the job, and the others wait for that abort rather than racing it (on a loaded
  // machine rank 0 can be seconds behind, and a second line, or none, was printed). A rank
  // whose stack failed alone (a module missing on its node) reports after the wait.
  if (rank != 0)
    pause_s(30, 0);
  report_line("error: " + error);
  // Time for the launcher to forward the line before the abort ends the job (MPICH's
  // mpiexec lost a monitor's line this way on a loaded machine).
  pause_s(0, 500000000);
  if (auto abort = real_fn<abort_fn>("PMPI_Abort"))
    abort(comm, 1);
  std::_Exit(1);
}

// Lines about the stack that every rank would print alike (it read the same configuration):
// rank 0 of the tools' world prints them, as it does a stack that cannot load.
void report_from_rank_0(const std::vector<std::string>& lines) {
  if (lines.empty())
    return;
  int rank = 0;
  if (auto comm_rank = real_fn<int (*)(MPI_Comm, int*)>("PMPI_Comm_rank"))
    comm_rank(g_tool_world, &rank);
  if (rank == 0)
    for (const std::string& line : lines)
      report_line(line);
}

// After the application's first init, in either model.
void start_tools() {
  if (g_ready.exchange(true))
    return;
  clock_finish_calibration();
  decode::learn_predefined_type_sizes();
  core_state& s = state();
  if (!s.load_error.empty())
    fail_the_job(s.load_error);
  if (std::string error = create_tool_world(); !error.empty())
    fail_the_job(error);
  g_active.store(true);
  s.in_mpi_ready = true;
  for_each_module([](loaded_module& m) {
    if (m.desc->mpi_ready != nullptr)
      m.desc->mpi_ready(m.state);
  });
  s.in_mpi_ready = false;
  report_from_rank_0(enable_counting(s));
  region_listener_count.store(region_listener_pending, std::memory_order_release);
}

// Before the application's last finalize: the modules' finalize, MPI still usable.
void stop_tools() {
  if (!g_ready.load() || g_stopped.exchange(true))
    return;
  g_stopped_in_this_call = true;
  for_each_module([](loaded_module& m) {
    if (m.desc->finalize != nullptr)
      m.desc->finalize(m.state);
  });
  g_active.store(false);
  free_tool_world();
  // The module that replaced the world has freed its communicator in its finalize: the calls
  // still to come (a PMPI tool's own in its MPI_Finalize wrapper) name the real world again,
  // whose first ranks are the application's.
  strata_call_marks[mark_world_replaced] = 0;
  world_replacement = MPI_COMM_WORLD;
}

void unload_tools() {
  if (!g_stopped_in_this_call || g_unloaded.exchange(true))
    return;
  region_listener_count.store(0, std::memory_order_release);
  for_each_module([](loaded_module& m) {
    if (m.desc->unload != nullptr)
      m.desc->unload(m.state);
  });
}

} // namespace

const void* host_world() {
  return g_active.load() ? &g_tool_world : nullptr;
}

bool mpi_active() {
  return g_active.load(std::memory_order_relaxed);
}

int host_replace_world(int self, const void* comm) {
  core_state& s = state();
  if (comm == nullptr || !s.in_mpi_ready || self < 0 ||
      self >= static_cast<int>(s.modules.size()) ||
      !s.modules[static_cast<size_t>(self)].takes_ranks)
    return -1; // only while MPI_Init runs (mpi_ready), from a module that said it would
  const MPI_Comm app = *static_cast<const MPI_Comm*>(comm);
#if MPI_VERSION >= 4
  remember_app_world_ranks(app);
#endif
  // The tools' world of every process is freed (collectively: every process calls this), and on
  // the application's processes it becomes theirs only, for the modules after this one (the
  // first of the stack: loading.cpp).
  free_tool_communicator();
  if (app == MPI_COMM_NULL)
    return 0; // a process the module keeps for itself: it ends with end_process
  if (duplicate_for_tools(app, &g_tool_world) != MPI_SUCCESS)
    return -1;
  modules_world = g_tool_world;
  world_replacing_layer = self;
  world_replacement = app;
  strata_call_marks[mark_world_replaced] = world_replacement != MPI_COMM_WORLD ? 1 : 0;
  decode::forget_world_ranks();
  chain_every_communicator_function(s);
  return 0;
}

void host_end_process(int /*self*/, int status) {
  g_active.store(false);
  free_tool_world();
  // The application's models as far as it opened them: its sessions, its world.
#if MPI_VERSION >= 4
  if (auto session_finalize = real_fn<int (*)(MPI_Session*)>("PMPI_Session_finalize"))
    for (MPI_Session& session : g_open_sessions)
      session_finalize(&session);
#endif
  if (g_world_model) {
    using finalize_fn = int (*)();
    if (auto finalize = real_fn<finalize_fn>("PMPI_Finalize"))
      finalize();
  }
  std::fflush(nullptr);
  std::exit(status);
}

} // namespace internal

void after_init(int result) {
  if (result != MPI_SUCCESS)
    return;
  {
    std::lock_guard<std::mutex> guard(g_models_lock);
    g_world_model = true;
  }
  start_tools();
}

#if MPI_VERSION >= 4
void after_session_init(int result, MPI_Session* session) {
  if (result != MPI_SUCCESS)
    return;
  {
    std::lock_guard<std::mutex> guard(g_models_lock);
    ++g_app_sessions;
    g_open_sessions.push_back(*session);
  }
  start_tools();
}
#endif

// The tools stop in the application's last finalize: MPI_Finalize with no session of the
// application open, or its last MPI_Session_finalize with the world model closed. A tools' world
// duplicated from MPI_COMM_WORLD does not outlive MPI_Finalize, so then they stop there.
void before_finalize() {
  bool last = false;
  {
    std::lock_guard<std::mutex> guard(g_models_lock);
    g_world_model = false;
    last = g_app_sessions == 0 || !g_tool_world_from_session;
  }
  if (last)
    stop_tools();
}

void after_finalize(int /*result*/) {
  unload_tools();
}

#if MPI_VERSION >= 4
void before_session_finalize(MPI_Session* session) {
  bool last = false;
  {
    std::lock_guard<std::mutex> guard(g_models_lock);
    last = g_app_sessions == 1 && !g_world_model;
    g_finalizing_session = *session; // MPI sets the handle to MPI_SESSION_NULL
  }
  if (last)
    stop_tools();
}

void after_session_finalize(int result, MPI_Session* /*session*/) {
  {
    std::lock_guard<std::mutex> guard(g_models_lock);
    if (result == MPI_SUCCESS && g_app_sessions > 0) {
      --g_app_sessions;
      std::erase(g_open_sessions, g_finalizing_session);
    }
  }
  unload_tools();
}

void narrow_world_pset(const char* pset_name, MPI_Group* group) {
  if (pset_name == nullptr || group == nullptr || std::string_view(pset_name) != "mpi://WORLD" ||
      g_app_world_ranks.empty())
    return;
  auto incl = real_fn<int (*)(MPI_Group, int, const int[], MPI_Group*)>("PMPI_Group_incl");
  auto group_free = real_fn<int (*)(MPI_Group*)>("PMPI_Group_free");
  MPI_Group narrowed = MPI_GROUP_NULL;
  if (incl == nullptr || incl(*group, static_cast<int>(g_app_world_ranks.size()),
                              g_app_world_ranks.data(), &narrowed) != MPI_SUCCESS)
    return;
  group_free(group);
  *group = narrowed;
}
#endif

} // namespace strata::core
