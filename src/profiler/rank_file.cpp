#include "profiler/rank_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace strata::profiler {

const char* status_name(job_status s) {
  switch (s) {
  case job_status::finalized:
    return "finalized";
  case job_status::aborted:
    return "aborted";
  case job_status::signal:
    return "signal";
  case job_status::running: // a rank file read after its rank is gone: no handler ran
    return "killed";
  case job_status::exited:
    break;
  }
  return "exit";
}

void copy_field(char* field, size_t size, const std::string& value) {
  const size_t n = value.size() < size - 1 ? value.size() : size - 1;
  std::memcpy(field, value.data(), n);
  field[n] = '\0';
}

std::vector<std::string> split_nul(const char* field, size_t size) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < size && field[i] != '\0') {
    const size_t len = ::strnlen(field + i, size - i);
    out.emplace_back(field + i, len);
    i += len + 1;
  }
  return out;
}

void rank_mapping::unmap() {
  if (header != nullptr)
    ::munmap(header, bytes);
  header = nullptr;
  slots = nullptr;
}

void merge_slot(routine_slot& into, const routine_slot& from) {
  if (from.calls == 0)
    return;
  into.min_ns = into.calls == 0 || from.min_ns < into.min_ns ? from.min_ns : into.min_ns;
  into.max_ns = into.calls == 0 || from.max_ns > into.max_ns ? from.max_ns : into.max_ns;
  into.calls += from.calls;
  into.time_ns += from.time_ns;
  into.count_sum += from.count_sum;
  into.bytes_sent += from.bytes_sent;
  into.bytes_received += from.bytes_received;
  for (int b = 0; b < size_bins; ++b)
    into.size_hist[b] += from.size_hist[b];
  for (int b = 0; b < comm_bins; ++b)
    into.comm_hist[b] += from.comm_hist[b];
}

rank_mapping create_rank_file(const std::string& path, const std::vector<std::string>& names,
                              uint32_t callsite_capacity, uint32_t thread_arrays) {
  rank_mapping m;
  m.path = path;
  const size_t count = names.size();
  m.bytes = sizeof(rank_header) + count * name_length + count * sizeof(routine_slot) +
            callsite_capacity * sizeof(callsite_slot) + count * sizeof(uint64_t) +
            sizeof(uint64_t) + size_t{thread_arrays} * count * sizeof(routine_slot);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    m.error = path + ": " + std::strerror(errno);
    return m;
  }
  // Every block reserved now, not a sparse file: a store through the mapping into a hole the
  // file system cannot fill (a full disk, a quota) is a SIGBUS, which kills the application.
  if (const int e = ::posix_fallocate(fd, 0, static_cast<off_t>(m.bytes)); e != 0) {
    m.error = path + " (" + std::to_string(m.bytes) + " bytes): " + std::strerror(e);
    ::close(fd);
    ::unlink(path.c_str());
    return m;
  }
  void* p = ::mmap(nullptr, m.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    m.error = path + ": mmap: " + std::strerror(errno);
    ::unlink(path.c_str());
    return m;
  }
  m.header = static_cast<rank_header*>(p);
  std::memcpy(m.header->magic, rank_file_magic, sizeof(rank_file_magic));
  m.header->version = rank_file_version;
  m.header->header_size = sizeof(rank_header);
  m.header->slot_size = sizeof(routine_slot);
  m.header->function_count = static_cast<uint32_t>(count);
  char* name_table = static_cast<char*>(p) + sizeof(rank_header);
  for (size_t i = 0; i < count; ++i)
    copy_field(name_table + i * name_length, name_length, names[i]);
  m.slots = reinterpret_cast<routine_slot*>(name_table + count * name_length);
  for (size_t i = 0; i < count; ++i)
    m.slots[i] = empty_routine_slot;
  m.header->callsite_capacity = callsite_capacity;
  if (callsite_capacity > 0)
    m.callsites = reinterpret_cast<callsite_slot*>(m.slots + count);
  m.uncharged_polls = reinterpret_cast<uint64_t*>(
      reinterpret_cast<callsite_slot*>(m.slots + count) + callsite_capacity);
  uint64_t* arrays = m.uncharged_polls + count;
  *arrays = thread_arrays;
  m.thread_arrays = thread_arrays;
  if (thread_arrays > 0)
    m.thread_slots = reinterpret_cast<routine_slot*>(arrays + 1);
  return m;
}

void move_into_rank_file(rank_mapping& file, const rank_header& facts,
                         const std::vector<routine_slot>& slots,
                         const std::vector<uint64_t>& uncharged_polls) {
  rank_header* h = file.header;
  const rank_header layout = *h;
  *h = facts;
  std::memcpy(h->magic, layout.magic, sizeof(h->magic));
  h->version = layout.version;
  h->header_size = layout.header_size;
  h->slot_size = layout.slot_size;
  h->function_count = layout.function_count;
  h->callsite_capacity = layout.callsite_capacity;
  std::memcpy(file.slots, slots.data(), slots.size() * sizeof(routine_slot));
  std::copy(uncharged_polls.begin(), uncharged_polls.end(), file.uncharged_polls);
}

read_result parse_rank_image(const unsigned char* bytes, size_t size, const std::string& path) {
  read_result r;
  r.data.path = path;
  if (size < sizeof(rank_header)) {
    r.error = path + ": truncated (" + std::to_string(size) + " bytes, a header needs " +
              std::to_string(sizeof(rank_header)) + ")";
    return r;
  }
  rank_header& h = r.data.header;
  std::memcpy(&h, bytes, sizeof(h));
  if (std::memcmp(h.magic, rank_file_magic, sizeof(rank_file_magic)) != 0) {
    r.error = path + ": not a Strata rank profile (bad magic)";
    return r;
  }
  if (h.version < oldest_rank_file_version || h.version > rank_file_version ||
      h.header_size != sizeof(rank_header) || h.slot_size != sizeof(routine_slot)) {
    r.error = path + ": rank profile version " + std::to_string(h.version) +
              " with a different layout; this Strata reads versions " +
              std::to_string(oldest_rank_file_version) + " to " + std::to_string(rank_file_version);
    return r;
  }
  const uint64_t count = h.function_count;
  const uint64_t sites = h.callsite_capacity;
  uint64_t need = sizeof(rank_header) +
                  count * (name_length + sizeof(routine_slot) + sizeof(uint64_t)) +
                  sites * sizeof(callsite_slot);
  uint64_t arrays = 0;
  if (count <= 100000 && sites <= (uint64_t{1} << 24) && h.version >= 7 &&
      need + sizeof(uint64_t) <= size) {
    std::memcpy(&arrays, bytes + need, sizeof(arrays));
    if (arrays > max_thread_arrays) {
      r.error = path + ": corrupt (" + std::to_string(arrays) + " thread arrays, at most " +
                std::to_string(max_thread_arrays) + ")";
      return r;
    }
    need += sizeof(uint64_t) + arrays * count * sizeof(routine_slot);
  } else if (h.version >= 7) {
    need += sizeof(uint64_t);
  }
  if (count > 100000 || sites > (uint64_t{1} << 24) || need > size) {
    r.error = path + ": truncated or corrupt (" + std::to_string(count) + " functions need " +
              std::to_string(need) + " bytes, the file has " + std::to_string(size) + ")";
    return r;
  }
  // Strings from the file are bounded here, whatever the file holds.
  auto terminate = [](char* field, size_t n) { field[n - 1] = '\0'; };
  terminate(h.module, sizeof(h.module));
  terminate(h.strata_version, sizeof(h.strata_version));
  terminate(h.job_id, sizeof(h.job_id));
  terminate(h.host, sizeof(h.host));
  terminate(h.user, sizeof(h.user));
  terminate(h.mpi_flavor, sizeof(h.mpi_flavor));
  terminate(h.mpi_library, sizeof(h.mpi_library));
  terminate(h.executable, sizeof(h.executable));
  for (auto& n : h.counter_names)
    terminate(n, sizeof(n));
  if (h.counter_count < 0 || h.counter_count > max_counters)
    h.counter_count = 0;
  const auto* names = reinterpret_cast<const char*>(bytes + sizeof(rank_header));
  r.data.names.reserve(count);
  for (uint64_t i = 0; i < count; ++i)
    r.data.names.emplace_back(names + i * name_length,
                              ::strnlen(names + i * name_length, name_length));
  r.data.slots.resize(count);
  const unsigned char* slots = bytes + sizeof(rank_header) + count * name_length;
  if (count > 0)
    std::memcpy(r.data.slots.data(), slots, count * sizeof(routine_slot));
  r.data.callsites.resize(sites);
  if (sites > 0)
    std::memcpy(r.data.callsites.data(), slots + count * sizeof(routine_slot),
                sites * sizeof(callsite_slot));
  // Untimed polls the rank had not yet moved into its slots: added now, each charged the mean
  // of the calls already in the slot (timed calls, and polls charged that same mean before).
  r.data.uncharged_polls.resize(count);
  if (count > 0)
    std::memcpy(r.data.uncharged_polls.data(),
                slots + count * sizeof(routine_slot) + sites * sizeof(callsite_slot),
                count * sizeof(uint64_t));
  // What threads counted in arrays of their own, before the polls are charged a mean.
  r.data.thread_arrays = static_cast<uint32_t>(arrays);
  const unsigned char* thread_slots = slots + count * sizeof(routine_slot) +
                                      sites * sizeof(callsite_slot) + count * sizeof(uint64_t) +
                                      sizeof(uint64_t);
  for (uint64_t a = 0; a < arrays; ++a)
    for (uint64_t i = 0; i < count; ++i) {
      routine_slot from{};
      std::memcpy(&from, thread_slots + (a * count + i) * sizeof(routine_slot), sizeof(from));
      merge_slot(r.data.slots[i], from);
    }
  for (uint64_t i = 0; i < count; ++i) {
    routine_slot& slot = r.data.slots[i];
    const uint64_t pending = r.data.uncharged_polls[i];
    if (pending == 0 || pending > (uint64_t{1} << 62) || slot.calls > (uint64_t{1} << 62))
      continue; // a count no process makes: left out rather than overflowed
    const uint64_t mean = slot.calls != 0 ? slot.time_ns / slot.calls : 0;
    slot.calls += pending;
    slot.time_ns += pending * mean;
  }
  return r;
}

read_result read_rank_file(const std::string& path) {
  read_result r;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    r.error = path + ": " + std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    return r;
  }
  std::vector<unsigned char> bytes(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n <= 0)
      break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  return parse_rank_image(bytes.data(), got, path);
}

} // namespace strata::profiler
