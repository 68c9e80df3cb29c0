// MPI_T for the profile module (mpi_t.hpp). What needs no MPI (folding a rank's elements, the
// packed reduction, the record's section) is in profiler/mpi_t_totals.hpp.
#include "mpi_t.hpp"

#include "options.hpp"
#include "profiler/clock.hpp"
#if defined(OPEN_MPI)
#include "open_mpi_components.hpp"
#endif
#include "state.hpp"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fmt/format.h>
#include <set>
#include <string_view>
#include <unistd.h>
#include <utility>

namespace strata::profiler {

namespace {

using mpi_t::value_kind;

// What starting MPI_T and reading its variables costs a job, measured on 2 to 4 ranks
// (docs/profile.md): Open MPI 4.1's MPI_T_init_thread after MPI_Init opens every component again
// (about 205 ms); MPICH's start is free and the reading at finalize about 4 ms.
#if defined(OPEN_MPI)
constexpr double mpi_t_cost_s = 0.25;
#else
constexpr double mpi_t_cost_s = 0.005;
#endif

// Larger arrays (one element per peer of a communicator of that many ranks) are not read.
constexpr int max_elements = 1 << 16;

struct datatype_facts {
  std::string name;
  value_kind kind = value_kind::unsigned_integer;
  int bytes = 0; // 0: not a number the module reads
};

datatype_facts facts_of(MPI_Datatype type) {
  if (type == MPI_UNSIGNED)
    return {"unsigned", value_kind::unsigned_integer, sizeof(unsigned)};
  if (type == MPI_UNSIGNED_LONG)
    return {"unsigned long", value_kind::unsigned_integer, sizeof(unsigned long)};
  if (type == MPI_UNSIGNED_LONG_LONG)
    return {"unsigned long long", value_kind::unsigned_integer, sizeof(unsigned long long)};
  if (type == MPI_COUNT)
    return {"count", value_kind::signed_integer, sizeof(MPI_Count)};
  if (type == MPI_INT)
    return {"int", value_kind::signed_integer, sizeof(int)};
  if (type == MPI_LONG)
    return {"long", value_kind::signed_integer, sizeof(long)};
  if (type == MPI_LONG_LONG)
    return {"long long", value_kind::signed_integer, sizeof(long long)};
  if (type == MPI_DOUBLE)
    return {"double", value_kind::floating, sizeof(double)};
  if (type == MPI_CHAR)
    return {"char", value_kind::unsigned_integer, 0};
  return {"other", value_kind::unsigned_integer, 0};
}

// One element of a variable's buffer as 64 bits of its kind.
uint64_t element_bits(const datatype_facts& t, const unsigned char* at) {
  switch (t.kind) {
  case value_kind::floating: {
    double v = 0;
    std::memcpy(&v, at, sizeof(v));
    return mpi_t::bits_of(v);
  }
  case value_kind::signed_integer:
    if (t.bytes == 4) {
      int32_t v = 0;
      std::memcpy(&v, at, sizeof(v));
      return mpi_t::bits_of(static_cast<int64_t>(v));
    } else {
      int64_t v = 0;
      std::memcpy(&v, at, sizeof(v));
      return mpi_t::bits_of(v);
    }
  case value_kind::unsigned_integer:
    break;
  }
  if (t.bytes == 4) {
    uint32_t v = 0;
    std::memcpy(&v, at, sizeof(v));
    return v;
  }
  uint64_t v = 0;
  std::memcpy(&v, at, sizeof(v));
  return v;
}

std::string binding_name(int bind) {
  const std::pair<int, const char*> names[] = {
      {MPI_T_BIND_NO_OBJECT, "none"},        {MPI_T_BIND_MPI_COMM, "communicator"},
      {MPI_T_BIND_MPI_DATATYPE, "datatype"}, {MPI_T_BIND_MPI_ERRHANDLER, "error handler"},
      {MPI_T_BIND_MPI_FILE, "file"},         {MPI_T_BIND_MPI_GROUP, "group"},
      {MPI_T_BIND_MPI_OP, "operation"},      {MPI_T_BIND_MPI_REQUEST, "request"},
      {MPI_T_BIND_MPI_WIN, "window"},        {MPI_T_BIND_MPI_MESSAGE, "message"},
      {MPI_T_BIND_MPI_INFO, "info"}};
  for (const auto& [value, name] : names)
    if (value == bind)
      return name;
  return "object " + std::to_string(bind);
}

// Why a variable must not be bound, or "". Open MPI 4.1 registers the variables of every MTL
// component it opened, selected or not, and binding one of an MTL that is not in use crashes
// in the component (mtl_psm2: psm2_mq_get_stats on a queue never opened). An MTL is in use only
// when its pointer, ompi_mtl, is set.
std::string unsafe_to_bind([[maybe_unused]] const std::string& name) {
#if defined(OPEN_MPI)
  if (name.starts_with("mtl_")) {
    void* const* mtl = static_cast<void* const*>(::dlsym(RTLD_DEFAULT, "ompi_mtl"));
    if (mtl == nullptr || *mtl == nullptr)
      return "its component (an MTL) is not in use: Open MPI would crash binding it";
  }
#endif
  return "";
}

bool read_once(mpi_t_state& t, size_t i, std::vector<unsigned char>& buffer, uint64_t& out) {
  const mpi_t::pvar_description& d = t.pvars[i];
  const datatype_facts type = facts_of(t.types[i]);
  buffer.resize(static_cast<size_t>(d.elements) * static_cast<size_t>(type.bytes));
  if (MPI_T_pvar_read(t.session, t.handles[i], buffer.data()) != MPI_SUCCESS)
    return false;
  std::vector<uint64_t> elements(d.elements);
  for (size_t e = 0; e < elements.size(); ++e)
    elements[e] = element_bits(type, buffer.data() + e * static_cast<size_t>(type.bytes));
  out = mpi_t::fold(d.kind, d.fold, elements.data(), elements.size());
  return true;
}

// This rank's value of every variable (since the baseline for those that accumulate).
std::vector<mpi_t::rank_value> read_values(mpi_t_state& t) {
  std::vector<mpi_t::rank_value> values(t.pvars.size());
  std::vector<unsigned char> buffer;
  for (size_t i = 0; i < t.pvars.size(); ++i) {
    if (t.handles[i] == MPI_T_PVAR_HANDLE_NULL)
      continue;
    uint64_t bits = 0;
    if (!read_once(t, i, buffer, bits)) {
      t.pvars[i].unread = "MPI_T_pvar_read refused it";
      continue;
    }
    const mpi_t::pvar_description& d = t.pvars[i];
    values[i] = {true, d.accumulates ? mpi_t::since(d.kind, bits, t.baseline[i]) : bits};
  }
  return values;
}

void describe_pvars(mpi_t_state& t) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  std::set<std::pair<std::string, int>> seen;
  for (int i = 0; i < static_cast<int>(t.pvars_exposed); ++i) {
    char name[256] = {0}, description[1024] = {0};
    int name_len = sizeof(name), description_len = sizeof(description);
    int verbosity = 0, var_class = 0, bind = 0, readonly = 0, continuous = 0, atomic = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_T_enum enumtype = MPI_T_ENUM_NULL;
    if (MPI_T_pvar_get_info(i, name, &name_len, &verbosity, &var_class, &type, &enumtype,
                            description, &description_len, &bind, &readonly, &continuous,
                            &atomic) != MPI_SUCCESS)
      continue;
    // Open MPI lists some variables once per component that registered them, under one name.
    if (!seen.emplace(name, var_class).second)
      continue;
    const int offset = var_class - MPI_T_PVAR_CLASS_STATE;
    const datatype_facts facts = facts_of(type);
    mpi_t::pvar_description d;
    d.index = i;
    d.name = name;
    d.description = description;
    d.var_class = mpi_t::class_name(offset);
    d.binding = binding_name(bind);
    d.datatype = facts.name;
    d.kind = facts.kind;
    d.fold = mpi_t::class_fold(offset);
    d.accumulates = mpi_t::class_accumulates(offset);
    MPI_T_pvar_handle handle = MPI_T_PVAR_HANDLE_NULL;
    MPI_Comm world = MPI_COMM_WORLD;
    void* object = nullptr;
    if (facts.bytes == 0)
      d.unread = "its datatype (" + facts.name + ") is not a number";
    else if (std::string unsafe = unsafe_to_bind(d.name); !unsafe.empty())
      d.unread = std::move(unsafe);
    else if (bind == MPI_T_BIND_MPI_COMM && (initialized == 0 || finalized != 0))
      d.unread = "bound to a communicator, and the program has no MPI_COMM_WORLD";
    else if (bind == MPI_T_BIND_MPI_COMM)
      object = &world; // the application's world: its traffic, not the tools'
    else if (bind != MPI_T_BIND_NO_OBJECT)
      d.unread = "bound to a " + d.binding + ", of which the profile holds none";
    int count = 0;
    if (d.unread.empty() &&
        MPI_T_pvar_handle_alloc(t.session, i, object, &handle, &count) != MPI_SUCCESS) {
      d.unread = "MPI_T_pvar_handle_alloc refused it";
      handle = MPI_T_PVAR_HANDLE_NULL;
    }
    if (handle != MPI_T_PVAR_HANDLE_NULL && (count < 0 || count > max_elements)) {
      d.unread = fmt::format("{} elements, more than the profile reads", count);
      MPI_T_pvar_handle_free(t.session, &handle);
      handle = MPI_T_PVAR_HANDLE_NULL;
    }
    if (handle != MPI_T_PVAR_HANDLE_NULL && continuous == 0 &&
        MPI_T_pvar_start(t.session, handle) != MPI_SUCCESS) {
      d.unread = "MPI_T_pvar_start refused it";
      MPI_T_pvar_handle_free(t.session, &handle);
      handle = MPI_T_PVAR_HANDLE_NULL;
    }
    d.elements = handle != MPI_T_PVAR_HANDLE_NULL ? static_cast<uint64_t>(count) : 0;
    t.pvars.push_back(std::move(d));
    t.handles.push_back(handle);
    t.types.push_back(type);
  }
  t.baseline.assign(t.pvars.size(), 0);
  for (size_t i = 0; i < t.pvars.size(); ++i)
    if (t.pvars[i].kind == value_kind::floating)
      t.baseline[i] = mpi_t::bits_of(0.0);
}

// The text of an enumeration's item, or the number.
std::string enum_item(MPI_T_enum enumtype, int value) {
  int items = 0;
  char name[256] = {0};
  int name_len = sizeof(name);
  if (MPI_T_enum_get_info(enumtype, &items, name, &name_len) != MPI_SUCCESS)
    return std::to_string(value);
  for (int j = 0; j < items; ++j) {
    int item_value = 0;
    name_len = sizeof(name);
    if (MPI_T_enum_get_item(enumtype, j, &item_value, name, &name_len) == MPI_SUCCESS &&
        item_value == value)
      return name;
  }
  return std::to_string(value);
}

// A control variable's value read into `buffer` (of `size` bytes, the last one a zero).
std::string cvar_text(MPI_Datatype type, MPI_T_enum enumtype, const char* buffer, size_t size,
                      int count) {
  if (type == MPI_CHAR)
    return std::string(buffer, ::strnlen(buffer, size));
  const datatype_facts facts = facts_of(type);
  if (facts.bytes == 0)
    return "";
  std::string out;
  for (int e = 0; e < count; ++e) {
    const auto* at = reinterpret_cast<const unsigned char*>(buffer) +
                     static_cast<size_t>(e) * static_cast<size_t>(facts.bytes);
    const uint64_t bits = element_bits(facts, at);
    std::string one;
    if (facts.kind == value_kind::floating)
      one = fmt::format("{}", mpi_t::double_of(bits));
    else if (facts.kind == value_kind::signed_integer)
      one = enumtype != MPI_T_ENUM_NULL ? enum_item(enumtype, static_cast<int>(bits))
                                        : std::to_string(static_cast<int64_t>(bits));
    else
      one = std::to_string(bits);
    out += (e == 0 ? "" : ",") + one;
  }
  return out;
}

// The control variables the environment sets, read once per reading of the control variables:
// looking each of Open MPI's 1,300 up in the environment cost more than reading them.
std::set<std::string, std::less<>> cvars_set_by_environment() {
  std::set<std::string, std::less<>> names;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry)
    for (std::string& name :
         mpi_t::cvars_set_by(STRATA_MPI_FLAVOR, std::string_view(*entry, ::strcspn(*entry, "="))))
      names.insert(std::move(name));
  return names;
}

// Rank 0's control variables without a binding, as text: those meant for users and tuners (the
// verbosity levels up to MPI_T_VERBOSITY_TUNER_ALL; Open MPI lists some 800 more for its own
// developers), and whatever the environment set.
void read_cvars(module_state& s, record::mpi_t_section& out) {
  const std::set<std::string, std::less<>> environment = cvars_set_by_environment();
  // One buffer for all: zeroing one per variable (Open MPI's strings take 2,048 bytes each) cost
  // a tenth of the reading. MPI_T ends a string with a zero within its count.
  std::vector<char> buffer;
  for (int i = 0; i < static_cast<int>(s.mpi_t.cvars_exposed); ++i) {
    char name[256] = {0}, description[8] = {0};
    int name_len = sizeof(name), description_len = sizeof(description);
    int verbosity = 0, bind = 0, scope = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_T_enum enumtype = MPI_T_ENUM_NULL;
    if (MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &enumtype, description,
                            &description_len, &bind, &scope) != MPI_SUCCESS ||
        bind != MPI_T_BIND_NO_OBJECT)
      continue;
    const std::string_view name_view(name, ::strnlen(name, sizeof(name)));
    const bool set = environment.find(name_view) != environment.end();
    if (!set && verbosity > MPI_T_VERBOSITY_TUNER_ALL)
      continue;
    std::string key(name_view);
    if (out.cvars.count(key) != 0)
      continue;
    if (set)
      out.cvars_set.push_back(key);
    MPI_T_cvar_handle handle = MPI_T_CVAR_HANDLE_NULL;
    int count = 0;
    if (MPI_T_cvar_handle_alloc(i, nullptr, &handle, &count) != MPI_SUCCESS)
      continue;
    const int bytes = type == MPI_CHAR ? 1 : facts_of(type).bytes;
    if (count > 0 && count <= 4096 && bytes > 0) {
      const size_t size = static_cast<size_t>(count) * static_cast<size_t>(bytes) + 1;
      if (buffer.size() < size)
        buffer.resize(size);
      buffer[0] = buffer[size - 1] = '\0';
      if (MPI_T_cvar_read(handle, buffer.data()) == MPI_SUCCESS)
        out.cvars.emplace(std::move(key), cvar_text(type, enumtype, buffer.data(), size, count));
    }
    MPI_T_cvar_handle_free(&handle);
  }
}

void stop(mpi_t_state& t) {
  if (!t.started)
    return;
  for (MPI_T_pvar_handle& h : t.handles)
    if (h != MPI_T_PVAR_HANDLE_NULL)
      MPI_T_pvar_handle_free(t.session, &h);
  if (t.session != MPI_T_PVAR_SESSION_NULL)
    MPI_T_pvar_session_free(&t.session);
#if defined(OPEN_MPI)
  MPI_T_finalize();
#endif
  // MPICH keeps the profile's reference until the process exits: its last MPI_T_finalize frees
  // its variables for good (mpi_t_start), even while MPI or the program still needs them.
  t.started = false;
}

std::string init_problem(int error) {
  return fmt::format("MPI_T_init_thread failed (error {}): the MPI library's own variables are "
                     "not recorded",
                     error);
}

// mpi_t=auto at MPI_Finalize: whether the job ran long enough for MPI_T to cost under 0.1 %;
// if not, says why in the record. Each rank decides on its own time since MPI_Init returned,
// without a collective of its own (each costs a scheduling round where ranks outnumber cores):
// the ranks' times differ by their skew at MPI_Init and MPI_Finalize, so only a job that ends
// within it of the threshold can see them decide apart. Rank 0's decision is then the record's,
// and a rank that did not read while rank 0 did is left out of the variables' figures (each says
// how many ranks it has).
bool long_enough(module_state& s) {
  const uint64_t init = s.header().init_mono_ns;
  const uint64_t ran_ns = init != 0 ? mono_ns() - init : 0;
  const double ran_s = static_cast<double>(ran_ns) / 1e9;
  if (ran_s >= min_job_s_for_mpi_t())
    return true;
  s.mpi_t.not_read =
      fmt::format("not read: the job ran {:.3g} s, under the {:.0f} s from which starting MPI_T "
                  "costs it less than 0.1 % (mpi_t=1 reads them in any job)",
                  ran_s, min_job_s_for_mpi_t());
  return false;
}

// MPI_T, its session and handles, once, at the first need.
void ensure_started(module_state& s) {
  mpi_t_state& t = s.mpi_t;
  if (!t.wanted || t.tried)
    return;
  t.tried = true;
  if (!t.initialized) {
    if (!t.problem.empty()) // MPI_T_init_thread failed in load
      return;
    int level = MPI_THREAD_SINGLE, provided = 0;
    MPI_Query_thread(&level);
    if (const int error = MPI_T_init_thread(level, &provided); error != MPI_SUCCESS) {
      t.problem = init_problem(error);
      if (s.rank == 0)
        s.host->log(s.self, t.problem.c_str());
      return;
    }
  }
  t.started = true;
  int pvars = 0, cvars = 0;
  if (MPI_T_pvar_get_num(&pvars) != MPI_SUCCESS)
    pvars = 0;
  if (MPI_T_cvar_get_num(&cvars) != MPI_SUCCESS)
    cvars = 0;
  t.pvars_exposed = static_cast<uint64_t>(pvars);
  t.cvars_exposed = static_cast<uint64_t>(cvars);
#if MPI_VERSION >= 4
  int events = 0;
  if (MPI_T_event_get_num(&events) == MPI_SUCCESS)
    t.events_exposed = static_cast<uint64_t>(events);
#endif
  if (pvars > 0 && MPI_T_pvar_session_create(&t.session) != MPI_SUCCESS) {
    t.session = MPI_T_PVAR_SESSION_NULL;
    t.problem = "MPI_T_pvar_session_create failed: the performance variables are not recorded";
    if (s.rank == 0)
      s.host->log(s.self, t.problem.c_str());
    return;
  }
  if (pvars > 0)
    describe_pvars(t);
}

} // namespace

double min_job_s_for_mpi_t() {
  return 1000 * mpi_t_cost_s;
}

void mpi_t_load([[maybe_unused]] module_state& s) {
#if defined(OPEN_MPI)
  mpi_t_state& t = s.mpi_t;
  t.wanted = options::current().mpi_t != options::mpi_t_reading::off;
  const char* probe = s.host->get_value("strata.probe");
  if (options::current().mpi_t != options::mpi_t_reading::always ||
      (probe != nullptr && std::strcmp(probe, "1") == 0))
    return;
  const std::set<std::string> before = open_mpi::loaded_components();
  const std::set<std::string> ahead = open_mpi::load_ahead();
  int provided = 0;
  // Only the module's callbacks call MPI_T, one at a time; MPI_Init sets the MPI thread level.
  if (const int error = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided); error != MPI_SUCCESS) {
    t.problem = init_problem(error); // said by rank 0 in mpi_ready, once the rank is known
    return;
  }
  t.initialized = true;
  // One more reference to each component it opened that was not loaded ahead, never given
  // back, like those loaded ahead: they stay loaded until the process exits, and with them the
  // libraries they need. Only the components (whose variables Open MPI keeps in them): the
  // libraries behind them (transports, Open MPI's common ones) stay as long as a component that
  // needs them does.
  for (const std::string& name : open_mpi::loaded_components())
    if (before.count(name) == 0 && ahead.count(name) == 0)
      dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
#endif
}

void mpi_t_start(module_state& s) {
  mpi_t_state& t = s.mpi_t;
  t.wanted = options::current().mpi_t != options::mpi_t_reading::off;
  t.automatic = options::current().mpi_t == options::mpi_t_reading::automatic;
#if defined(OPEN_MPI)
  if (!t.initialized && !t.problem.empty() && s.rank == 0)
    s.host->log(s.self, t.problem.c_str());
#else
  // Whatever the option: MPICH (4.0) cannot start MPI_T again after its last MPI_T_finalize
  // (its tables of variables are freed and never rebuilt: the next MPI_T call dereferences
  // null), and that last MPI_T_finalize frees variables MPI_Init set, which MPI goes on reading.
  // A program that starts and ends MPI_T itself would otherwise make the profile's later start
  // crash it. Started here, it costs microseconds; the profile gives its reference back never.
  ensure_started(s);
#endif
}

void mpi_t_reset(module_state& s) {
  s.mpi_t.asked = true;
  ensure_started(s);
  mpi_t_state& t = s.mpi_t;
  if (!t.started)
    return;
  std::vector<unsigned char> buffer;
  for (size_t i = 0; i < t.pvars.size(); ++i)
    if (t.pvars[i].accumulates && t.handles[i] != MPI_T_PVAR_HANDLE_NULL) {
      uint64_t bits = 0;
      if (read_once(t, i, buffer, bits))
        t.baseline[i] = bits;
    }
}

mpi_t::agreement_layout mpi_t_agreement(module_state& s, bool at_finalize) {
  mpi_t_state& t = s.mpi_t;
  if (!t.wanted)
    return {};
  if (!at_finalize)
    t.asked = true;
  else if (t.automatic && !t.asked && !long_enough(s))
    return {}; // no rank reads: none starts MPI_T for it (the MPI may have started it: MPICH)
  ensure_started(s);
  return mpi_t::agreement_of_rank(t.pvars.size(), mpi_t::layout_fingerprint(t.pvars));
}

std::vector<uint64_t> mpi_t_packed(module_state& s, const mpi_t::agreement_layout& reduced) {
  mpi_t_state& t = s.mpi_t;
  const mpi_t::agreement layout = mpi_t::agreement_over_ranks(reduced);
  if (!t.wanted || layout.most_pvars == 0 || !layout.same_variables)
    return {};
  // A rank that lists none (MPI_T failed there) takes part with nothing read.
  const bool listing = !t.pvars.empty();
  const std::vector<mpi_t::pvar_description> none(listing ? 0 : layout.most_pvars);
  return mpi_t::pack_rank(listing ? t.pvars : none, read_values(t), static_cast<uint64_t>(s.rank));
}

std::optional<record::mpi_t_section> mpi_t_section(module_state& s,
                                                   const mpi_t::agreement_layout& reduced,
                                                   const std::vector<uint64_t>& combined,
                                                   bool at_finalize) {
  mpi_t_state& t = s.mpi_t;
  if (!t.wanted)
    return std::nullopt;
  std::optional<record::mpi_t_section> out;
  if (s.rank == 0) {
    record::mpi_t_section& section = out.emplace();
    section.problem = t.problem;
    if (!t.not_read.empty())
      section.not_read = t.not_read;
    if (!mpi_t::agreement_over_ranks(reduced).same_variables && section.problem.empty())
      section.problem = "the ranks expose different performance variables: none are recorded";
    if (t.started) { // else not known: MPI_T was never started
      section.pvars_exposed = t.pvars_exposed;
      section.cvars_exposed = t.cvars_exposed;
      section.events_exposed = t.events_exposed;
    }
    if (!combined.empty())
      section.pvars = mpi_t::unpack_pvars(t.pvars, combined);
    if (at_finalize && t.started && t.not_read.empty())
      read_cvars(s, section);
  }
  if (at_finalize)
    stop(t);
  return out;
}

} // namespace strata::profiler
