// The communicator cache: size, rank and the rank -> world rank table of each communicator,
// and of each window's group, computed the first time a call uses it. Lookups are lock-free; the
// first sight of a communicator takes a lock and allocates (once per communicator, not once per
// call).
#include "core/decode.hpp"
#include "core/core_internal.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>

namespace strata::decode {

mpi_api api;

namespace {

struct real_comm_api {
  int (*comm_size)(MPI_Comm, int*);
  int (*comm_rank)(MPI_Comm, int*);
  int (*comm_test_inter)(MPI_Comm, int*);
  int (*comm_remote_size)(MPI_Comm, int*);
  int (*comm_group)(MPI_Comm, MPI_Group*);
  int (*comm_remote_group)(MPI_Comm, MPI_Group*);
  int (*group_translate_ranks)(MPI_Group, int, const int[], MPI_Group, int[]);
  int (*group_free)(MPI_Group*);
  int (*comm_create_keyval)(MPI_Comm_copy_attr_function*, MPI_Comm_delete_attr_function*, int*,
                            void*);
  int (*comm_set_attr)(MPI_Comm, int, void*);
  int (*initialized)(int*);
  int (*finalized)(int*);
  int (*win_get_group)(MPI_Win, MPI_Group*);
  int (*group_size)(MPI_Group, int*);
  int (*group_rank)(MPI_Group, int*);
  int (*win_create_keyval)(MPI_Win_copy_attr_function*, MPI_Win_delete_attr_function*, int*, void*);
  int (*win_set_attr)(MPI_Win, int, void*);
  int (*topo_test)(MPI_Comm, int*);
  int (*cartdim_get)(MPI_Comm, int*);
  int (*graph_neighbors_count)(MPI_Comm, int, int*);
  int (*dist_graph_neighbors_count)(MPI_Comm, int*, int*, int*);
} real_comm;

// Open addressing, never shrinking. A slot's key is published last (release), so a reader that
// sees the key sees the whole entry. A freed communicator's slot is tombstoned by the attribute
// delete callback, because MPI reuses handle values.
constexpr size_t table_size = 1u << 14;
constexpr uint64_t empty_key = 0;
constexpr uint64_t tombstone = ~uint64_t{0};

using slot = comm_slot;
// No handle's bits are a tombstone: where a thread's last look-up starts.
const comm_slot tombstoned_slot{tombstone, {}};

slot table[table_size];
std::mutex insert_lock;
std::atomic<uint32_t> next_id{1};
int keyval = -1;
MPI_Group world_group = MPI_GROUP_NULL;
int world_group_size = 0;

size_t hash(uint64_t key) {
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 50);
}

int forget_comm(MPI_Comm, int, void* attribute, void*) {
  auto* s = static_cast<slot*>(attribute);
  s->key.store(tombstone, std::memory_order_release);
  return MPI_SUCCESS;
}

template <typename F> void resolve(F& fn, const char* name) {
  fn = reinterpret_cast<F>(core::find_real(name));
}

// MPI's world model is initialized and not finalized.
bool world_model_up() {
  int init = 0;
  int fin = 0;
  if (real_comm.initialized == nullptr || real_comm.initialized(&init) != MPI_SUCCESS || !init)
    return false;
  return real_comm.finalized(&fin) == MPI_SUCCESS && !fin;
}

// Communicators can be asked about: the tools are running (a Sessions program has no world
// model), or the world model is up (a PMPI tool's calls inside MPI_Init).
bool mpi_usable() {
  return core::mpi_active() || world_model_up();
}

// The application's world: MPI_COMM_WORLD, or what a module put in its place (the monitor's
// world without its tool ranks), whose ranks are the world ranks every layer sees.
MPI_Comm application_world() {
  return core::world_replaced() ? core::world_replacement : MPI_COMM_WORLD;
}

// The group whose ranks events call world ranks: the application's world's, or, in a program
// that uses only Sessions, the tools' communicator of every process (strata_host::world).
MPI_Group world_ranks_group() {
  MPI_Group group = MPI_GROUP_NULL;
  const void* tools = core::host_world();
  if (core::world_replaced())
    real_comm.comm_group(core::world_replacement, &group);
  else if (world_model_up() || tools == nullptr)
    real_comm.comm_group(MPI_COMM_WORLD, &group);
  else
    real_comm.comm_group(*static_cast<const MPI_Comm*>(tools), &group);
  return group;
}

// The world rank of each rank of `group`, `ranks` long: allocated once per communicator or
// window and kept, since events may still point at it.
void learn_world_group() {
  if (world_group != MPI_GROUP_NULL)
    return;
  world_group = world_ranks_group();
  world_group_size = 0;
  if (world_group != MPI_GROUP_NULL)
    real_comm.group_size(world_group, &world_group_size);
}

int* world_ranks_of(MPI_Group group, int ranks) {
  learn_world_group();
  int* in_group = new int[static_cast<size_t>(ranks)];
  int* world = new int[static_cast<size_t>(ranks)];
  for (int r = 0; r < ranks; ++r)
    in_group[r] = r;
  real_comm.group_translate_ranks(group, ranks, in_group, world_group, world);
  delete[] in_group;
  return world;
}

// What the summed calls read of a group, from its size and world ranks, once when it is first
// seen: its communicator-size bin, and the sums per peer's view of it (comm_info::pair_world):
// its world ranks where each is a rank of the world. The application's world (no table of world
// ranks) gets one, 0 to size - 1.
void set_summed_view(comm_info& info) {
  info.comm_bin = static_cast<uint8_t>(strata_comm_bin(static_cast<uint64_t>(info.size)));
  learn_world_group();
  if (info.size <= 0 || (info.world_ranks == nullptr && info.size > world_group_size))
    return;
  const int* world = info.world_ranks;
  if (world == nullptr) {
    int* identity = new int[static_cast<size_t>(info.size)];
    for (int r = 0; r < info.size; ++r)
      identity[r] = r;
    world = identity;
  }
  for (int r = 0; r < info.size; ++r)
    if (static_cast<unsigned>(world[r]) >= static_cast<unsigned>(world_group_size))
      return;
  info.pair_world = world;
  info.pair_ranks = static_cast<uint32_t>(info.size);
}

slot* insert(MPI_Comm comm, uint64_t key) {
  std::lock_guard<std::mutex> guard(insert_lock);
  size_t i = hash(key);
  for (size_t probes = 0; probes < table_size; ++probes, i = (i + 1) & (table_size - 1)) {
    const uint64_t k = table[i].key.load(std::memory_order_acquire);
    if (k == key)
      return &table[i];
    if (k != empty_key && k != tombstone)
      continue;
    comm_info info;
    if (!mpi_usable() || real_comm.comm_size(comm, &info.size) != MPI_SUCCESS)
      return nullptr;
    real_comm.comm_rank(comm, &info.rank);
    int inter = 0;
    real_comm.comm_test_inter(comm, &inter);
    info.inter = inter != 0;
    MPI_Group group = MPI_GROUP_NULL;
    int peers = info.size;
    if (info.inter) {
      real_comm.comm_remote_size(comm, &peers);
      real_comm.comm_remote_group(comm, &group);
    } else if (comm != application_world()) {
      real_comm.comm_group(comm, &group);
    }
    if (group != MPI_GROUP_NULL) {
      info.world_ranks = world_ranks_of(group, peers);
      info.size = peers;
      real_comm.group_free(&group);
    }
    set_summed_view(info);
    info.id = next_id.fetch_add(1);
    table[i].info = info;
    if (keyval == -1)
      real_comm.comm_create_keyval(MPI_COMM_NULL_COPY_FN, forget_comm, &keyval, nullptr);
    table[i].key.store(key, std::memory_order_release);
    real_comm.comm_set_attr(comm, keyval, &table[i]);
    return &table[i];
  }
  return nullptr; // full: events go without communicator details rather than fail
}

// The windows' table, as the communicators' (a program has few windows).
constexpr size_t window_table_size = 1u << 10;
slot window_table[window_table_size];
int window_keyval = -1;

int forget_window(MPI_Win, int, void* attribute, void*) {
  auto* s = static_cast<slot*>(attribute);
  s->key.store(tombstone, std::memory_order_release);
  return MPI_SUCCESS;
}

slot* insert_window(MPI_Win win, uint64_t key, size_t i) {
  std::lock_guard<std::mutex> guard(insert_lock);
  for (size_t probes = 0; probes < window_table_size;
       ++probes, i = (i + 1) & (window_table_size - 1)) {
    const uint64_t k = window_table[i].key.load(std::memory_order_acquire);
    if (k == key)
      return &window_table[i];
    if (k != empty_key && k != tombstone)
      continue;
    MPI_Group group = MPI_GROUP_NULL;
    if (!mpi_usable() || real_comm.win_get_group == nullptr ||
        real_comm.win_get_group(win, &group) != MPI_SUCCESS || group == MPI_GROUP_NULL)
      return nullptr;
    comm_info info;
    real_comm.group_size(group, &info.size);
    real_comm.group_rank(group, &info.rank);
    info.world_ranks = world_ranks_of(group, info.size);
    real_comm.group_free(&group);
    set_summed_view(info);
    info.id = next_id.fetch_add(1);
    window_table[i].info = info;
    if (window_keyval == -1)
      real_comm.win_create_keyval(MPI_WIN_NULL_COPY_FN, forget_window, &window_keyval, nullptr);
    window_table[i].key.store(key, std::memory_order_release);
    real_comm.win_set_attr(win, window_keyval, &window_table[i]);
    return &window_table[i];
  }
  return nullptr; // full: the targets of this window go untranslated rather than fail
}

} // namespace

void resolve_api() {
  resolve(api.type_size, "PMPI_Type_size");
  resolve(api.type_size_x, "PMPI_Type_size_x");
  resolve(api.get_count, "PMPI_Get_count");
  resolve(api.get_elements_x, "PMPI_Get_elements_x");
  resolve(api.test_cancelled, "PMPI_Test_cancelled");
  resolve(real_comm.comm_size, "PMPI_Comm_size");
  resolve(real_comm.comm_rank, "PMPI_Comm_rank");
  resolve(real_comm.comm_test_inter, "PMPI_Comm_test_inter");
  resolve(real_comm.comm_remote_size, "PMPI_Comm_remote_size");
  resolve(real_comm.comm_group, "PMPI_Comm_group");
  resolve(real_comm.comm_remote_group, "PMPI_Comm_remote_group");
  resolve(real_comm.group_translate_ranks, "PMPI_Group_translate_ranks");
  resolve(real_comm.group_free, "PMPI_Group_free");
  resolve(real_comm.comm_create_keyval, "PMPI_Comm_create_keyval");
  resolve(real_comm.comm_set_attr, "PMPI_Comm_set_attr");
  resolve(real_comm.initialized, "PMPI_Initialized");
  resolve(real_comm.finalized, "PMPI_Finalized");
  resolve(real_comm.win_get_group, "PMPI_Win_get_group");
  resolve(real_comm.group_size, "PMPI_Group_size");
  resolve(real_comm.group_rank, "PMPI_Group_rank");
  resolve(real_comm.win_create_keyval, "PMPI_Win_create_keyval");
  resolve(real_comm.win_set_attr, "PMPI_Win_set_attr");
  resolve(real_comm.topo_test, "PMPI_Topo_test");
  resolve(real_comm.cartdim_get, "PMPI_Cartdim_get");
  resolve(real_comm.graph_neighbors_count, "PMPI_Graph_neighbors_count");
  resolve(real_comm.dist_graph_neighbors_count, "PMPI_Dist_graph_neighbors_count");
}

int64_t learn_neighbor_degrees(MPI_Comm comm, const comm_info* c) {
  int topology = MPI_UNDEFINED;
  int sources = 0;
  int destinations = 0;
  if (real_comm.topo_test == nullptr || real_comm.topo_test(comm, &topology) != MPI_SUCCESS)
    topology = MPI_UNDEFINED;
  if (topology == MPI_CART) {
    int dimensions = 0;
    real_comm.cartdim_get(comm, &dimensions);
    sources = destinations = 2 * dimensions;
  } else if (topology == MPI_GRAPH) {
    real_comm.graph_neighbors_count(comm, c->rank, &sources);
    destinations = sources;
  } else if (topology == MPI_DIST_GRAPH) {
    int weighted = 0;
    real_comm.dist_graph_neighbors_count(comm, &sources, &destinations, &weighted);
  }
  // No topology: MPI reports the call's error; it sent nothing counted.
  const int64_t degrees = static_cast<int64_t>(std::max(sources, 0)) << 32 |
                          static_cast<int64_t>(std::max(destinations, 0));
  std::atomic_ref<int64_t>(c->neighbor_degrees).store(degrees, std::memory_order_relaxed);
  return degrees;
}

predefined_type_slot predefined_types[predefined_type_slots];

namespace {

// MPI's predefined datatypes (MPI 4.0, section 3.2.2, 4.1.1 and 5.9.4; those an MPI may lack
// only where its mpi.h defines them). A type this list misses is asked of MPI on every call.
const MPI_Datatype known_predefined_types[] = {
    // C
    MPI_CHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_LONG_LONG_INT, MPI_LONG_LONG, MPI_SIGNED_CHAR,
    MPI_UNSIGNED_CHAR, MPI_UNSIGNED_SHORT, MPI_UNSIGNED, MPI_UNSIGNED_LONG, MPI_UNSIGNED_LONG_LONG,
    MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_WCHAR, MPI_C_BOOL, MPI_INT8_T, MPI_INT16_T,
    MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T, MPI_C_COMPLEX,
    MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX, MPI_BYTE, MPI_PACKED,
    MPI_AINT, MPI_OFFSET, MPI_COUNT,
    // Fortran
    MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_COMPLEX, MPI_LOGICAL, MPI_CHARACTER,
    MPI_DOUBLE_COMPLEX,
#ifdef MPI_INTEGER1
    MPI_INTEGER1,
#endif
#ifdef MPI_INTEGER2
    MPI_INTEGER2,
#endif
#ifdef MPI_INTEGER4
    MPI_INTEGER4,
#endif
#ifdef MPI_INTEGER8
    MPI_INTEGER8,
#endif
#ifdef MPI_REAL4
    MPI_REAL4,
#endif
#ifdef MPI_REAL8
    MPI_REAL8,
#endif
#ifdef MPI_COMPLEX8
    MPI_COMPLEX8,
#endif
#ifdef MPI_COMPLEX16
    MPI_COMPLEX16,
#endif
// C++
#ifdef MPI_CXX_BOOL
    MPI_CXX_BOOL,
#endif
#ifdef MPI_CXX_FLOAT_COMPLEX
    MPI_CXX_FLOAT_COMPLEX,
#endif
#ifdef MPI_CXX_DOUBLE_COMPLEX
    MPI_CXX_DOUBLE_COMPLEX,
#endif
#ifdef MPI_CXX_LONG_DOUBLE_COMPLEX
    MPI_CXX_LONG_DOUBLE_COMPLEX,
#endif
    // For MPI_MINLOC and MPI_MAXLOC
    MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT,
    MPI_2REAL, MPI_2DOUBLE_PRECISION, MPI_2INTEGER};

} // namespace

#if defined(MPICH)
std::atomic<uint64_t> builtin_type_kind{0x4c000000u};
#endif

void learn_predefined_type_sizes() {
  static std::once_flag learned;
  std::call_once(learned, [] {
    for (const MPI_Datatype type : known_predefined_types) {
      const uint64_t bits = handle_bits(type);
      // A type this MPI was built without (MPI_DATATYPE_NULL) has no size to ask.
      if (type == MPI_DATATYPE_NULL || bits == 0)
        continue;
      MPI_Count size = 0;
      if (api.type_size_x(type, &size) != MPI_SUCCESS || size < 0)
        continue;
#if defined(MPICH)
      if ((bits & builtin_type_kind_mask) == builtin_type_kind.load() &&
          builtin_type_size(bits) != static_cast<int64_t>(size))
        builtin_type_kind.store(1); // never a masked handle's: every type through the table below
#endif
      size_t i = predefined_type_slot_of(bits);
      while (true) {
        const uint64_t key = predefined_types[i].handle.load(std::memory_order_relaxed);
        if (key == 0 || key == bits)
          break;
        i = (i + 1) & (predefined_type_slots - 1);
      }
      predefined_types[i].size = static_cast<int64_t>(size);
      predefined_types[i].handle.store(bits, std::memory_order_release);
    }
  });
}

int world_rank_count() {
  std::lock_guard<std::mutex> guard(insert_lock);
  learn_world_group();
  return world_group_size;
}

void forget_world_ranks() {
  std::lock_guard<std::mutex> guard(insert_lock);
  if (world_group != MPI_GROUP_NULL && real_comm.group_free != nullptr)
    real_comm.group_free(&world_group);
  world_group = MPI_GROUP_NULL;
  world_group_size = 0;
  // The groups looked up so far were bounded by the world before: their sums per peer go the
  // long way now, checked against the module's sums (the world changes while MPI_Init runs,
  // before any call is summed).
  for (slot& s : table)
    s.info.pair_ranks = 0;
  for (slot& s : window_table)
    s.info.pair_ranks = 0;
}

__thread const comm_slot* last_comm __attribute__((tls_model("initial-exec"))) = &tombstoned_slot;

const comm_info* find_comm_without_mpi(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL)
    return nullptr;
  uint64_t key = handle_bits(comm);
  if (key == empty_key || key == tombstone)
    key ^= 0x5bd1e995u;
  size_t i = hash(key);
  for (size_t probes = 0; probes < table_size; ++probes, i = (i + 1) & (table_size - 1)) {
    const uint64_t k = table[i].key.load(std::memory_order_acquire);
    if (k == key)
      return &table[i].info;
    if (k == empty_key)
      return nullptr;
  }
  return nullptr;
}

const comm_info no_group{};

const comm_info* lookup_comm_in_table(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL)
    return nullptr;
  uint64_t key = handle_bits(comm);
  if (key == empty_key || key == tombstone)
    key ^= 0x5bd1e995u; // keep the reserved keys free; collisions are compared in full below
  size_t i = hash(key);
  slot* found = nullptr;
  for (size_t probes = 0; probes < table_size; ++probes, i = (i + 1) & (table_size - 1)) {
    const uint64_t k = table[i].key.load(std::memory_order_acquire);
    if (k == key) {
      found = &table[i];
      break;
    }
    if (k == empty_key)
      break;
  }
  if (found == nullptr)
    found = insert(comm, key);
  if (found == nullptr)
    return nullptr;
  last_comm = found;
  return &found->info;
}

__thread const comm_slot* last_window __attribute__((tls_model("initial-exec"))) = &tombstoned_slot;

const comm_info* lookup_window_in_table(MPI_Win win) {
  if (win == MPI_WIN_NULL)
    return nullptr;
  uint64_t key = handle_bits(win);
  if (key == empty_key || key == tombstone)
    key ^= 0x5bd1e995u;
  const size_t home = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 54);
  slot* found = nullptr;
  size_t i = home;
  for (size_t probes = 0; probes < window_table_size;
       ++probes, i = (i + 1) & (window_table_size - 1)) {
    const uint64_t k = window_table[i].key.load(std::memory_order_acquire);
    if (k == key) {
      found = &window_table[i];
      break;
    }
    if (k == empty_key)
      break;
  }
  if (found == nullptr)
    found = insert_window(win, key, home);
  if (found == nullptr)
    return nullptr;
  last_window = found;
  return &found->info;
}

} // namespace strata::decode
