#include "python_sites/extensions.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace strata::python_sites {

namespace {

struct code_range {
  uintptr_t begin;
  uintptr_t end;
  bool extension;
};

// One reading of the loaded objects, sorted by address; published whole and never freed (a
// reader may still hold an older one; there is one per change of the loaded objects).
struct range_table {
  unsigned long long adds = 0; // dl_iterate_phdr's count of objects loaded so far
  std::vector<code_range> ranges;
};

std::atomic<const range_table*> current{nullptr};
std::mutex rebuilding;

// Return addresses already classified (an MPI call is made from a few places of mpi4py): the
// address with the top bit set for an extension module's, in a slot chosen by the address.
constexpr size_t seen_slots = 256;
constexpr uint64_t in_extension_bit = uint64_t{1} << 63;
std::atomic<uint64_t> seen_addresses[seen_slots];

std::atomic<uint64_t>& seen_slot(uintptr_t address) {
  return seen_addresses[(address * 0x9E3779B97F4A7C15ull) >> 56];
}

struct loaded_object {
  std::string name;
  std::vector<code_range> code;
};

int collect(dl_phdr_info* info, size_t /*size*/, void* out) {
  auto& objects = *static_cast<std::vector<loaded_object>*>(out);
  loaded_object object;
  object.name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) != 0) {
      const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
      object.code.push_back({begin, begin + ph.p_memsz, false});
    }
  }
  objects.push_back(std::move(object));
  return 0;
}

int count_adds(dl_phdr_info* info, size_t /*size*/, void* out) {
  *static_cast<unsigned long long*>(out) = info->dlpi_adds;
  return 1; // the first object says it
}

unsigned long long objects_added() {
  unsigned long long adds = 0;
  ::dl_iterate_phdr(count_adds, &adds);
  return adds;
}

// PyInit_<name>, where <name> is the file name up to its first dot ("MPI" for
// MPI.cpython-311-x86_64-linux-gnu.so).
bool is_extension_module(const std::string& path) {
  if (path.empty())
    return false; // the program itself
  const size_t slash = path.rfind('/');
  const std::string file = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string init = "PyInit_" + file.substr(0, file.find('.'));
  void* handle = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr)
    return false;
  const bool found = ::dlsym(handle, init.c_str()) != nullptr;
  ::dlclose(handle);
  return found;
}

const range_table* read_loaded_objects() {
  std::vector<loaded_object> objects;
  const unsigned long long adds = objects_added();
  ::dl_iterate_phdr(collect, &objects);
  // Classified outside dl_iterate_phdr, which holds the loader's lock.
  std::vector<code_range> ranges;
  for (loaded_object& object : objects) {
    const bool extension = !object.code.empty() && is_extension_module(object.name);
    for (code_range r : object.code) {
      r.extension = extension;
      ranges.push_back(r);
    }
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const code_range& a, const code_range& b) { return a.begin < b.begin; });
  return new range_table{adds, std::move(ranges)}; // NOLINT: published for good, see above
}

// The range holding `address`, or nullptr.
const code_range* find(const range_table* table, uintptr_t address) {
  const auto after = std::upper_bound(table->ranges.begin(), table->ranges.end(), address,
                                      [](uintptr_t a, const code_range& r) { return a < r.begin; });
  if (after == table->ranges.begin())
    return nullptr;
  const code_range& r = *(after - 1);
  return address < r.end ? &r : nullptr;
}

} // namespace

void note_loaded_objects() {
  std::lock_guard<std::mutex> lock(rebuilding);
  current.store(read_loaded_objects(), std::memory_order_release);
  for (std::atomic<uint64_t>& slot : seen_addresses)
    slot.store(0, std::memory_order_relaxed);
}

namespace {

bool look_up(uintptr_t address) {
  const range_table* table = current.load(std::memory_order_acquire);
  if (table == nullptr)
    return false;
  if (const code_range* r = find(table, address))
    return r->extension;
  // In no object we know: one loaded since (read them again), or code outside any object.
  {
    std::lock_guard<std::mutex> lock(rebuilding);
    table = current.load(std::memory_order_acquire);
    if (objects_added() != table->adds) {
      table = read_loaded_objects();
      current.store(table, std::memory_order_release);
    }
  }
  const code_range* r = find(table, address);
  return r != nullptr && r->extension;
}

} // namespace

bool in_extension_module(uintptr_t address) {
  std::atomic<uint64_t>& slot = seen_slot(address);
  const uint64_t cached = slot.load(std::memory_order_relaxed);
  if ((cached & ~in_extension_bit) == address)
    return (cached & in_extension_bit) != 0;
  const bool extension = look_up(address);
  slot.store(address | (extension ? in_extension_bit : 0), std::memory_order_relaxed);
  return extension;
}

} // namespace strata::python_sites
