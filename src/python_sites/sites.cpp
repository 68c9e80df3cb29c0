// The table of distinct Python call sites and the capture that fills it (capture.hpp).
#include "python_sites/capture.hpp"
#include "python_sites/cpython.hpp"
#include "python_sites/extensions.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace strata::python_sites {

bool enabled = false;
site_capture capture_site = &python_call_site;
// What last_call.code is until a site was found: no frame runs it, so no frame's code equals it.
alignas(16) const char unseen_code[256] = {};
thread_state_watch never_watched;
__thread last_place last_call __attribute__((tls_model("initial-exec"))) = {
    nullptr, nullptr, 0, unseen_code, nullptr, {}, 0, nullptr, nullptr, &never_watched};

namespace {

// One distinct place. `key` packs the code object's address (16-byte aligned, below 2^47) and
// the instruction's offset (below 2^21), so that one compare-and-swap claims an entry; the
// thread that claims it resolves the text, then publishes it with `ready`.
struct site {
  std::atomic<uint64_t> key{0};
  std::atomic<bool> ready{false};
  uint64_t identity = 0;    // frame_cursor::identity of the code object it was resolved from
  bool transparent = false; // the interpreter's own frozen modules: the caller's place instead
  int line = 0;
  const char* file = nullptr;
  const char* function = nullptr;
  // The first entry of the same code object and line, when this is another instruction of it:
  // its key is given instead. (3.11 runs a call from PRECALL or CALL depending on whether the
  // instruction has been specialised; one line would otherwise be two sites.)
  const site* same_line = nullptr;
};

constexpr size_t site_capacity = 4096; // a full table gives the extension's address instead
constexpr int site_probes = 32;

site sites[site_capacity];

uint64_t key_of(const frame_place& place) {
  const auto code = reinterpret_cast<uintptr_t>(place.code);
  if (code == 0 || (code & 15) != 0 || code >= (uintptr_t{1} << 47) || place.offset >= (1u << 21))
    return 0;
  return (static_cast<uint64_t>(code) >> 4) << 21 | place.offset;
}

char* copy_text(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out != nullptr)
    std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

// A resolved entry for the same code object and line as `s`, if there is one (a scan of the
// table, once per distinct instruction).
const site* first_of_line(const site& s) {
  const uint64_t code = s.key.load(std::memory_order_relaxed) >> 21;
  for (const site& other : sites) {
    if (&other != &s && other.ready.load(std::memory_order_acquire) && other.same_line == nullptr &&
        other.line == s.line && other.identity == s.identity &&
        other.key.load(std::memory_order_relaxed) >> 21 == code)
      return &other;
  }
  return nullptr;
}

void resolve(site& s, const frame_cursor& cursor, const frame_place& place, uint64_t identity) {
  s.identity = identity;
  place_text text;
  if (!cursor.describe(place, text))
    text.file = "<unknown>";
  s.transparent = is_frozen_module(text.file);
  s.line = text.line;
  s.file = copy_text(text.file);
  s.function = copy_text(text.function);
  s.same_line = first_of_line(s);
  s.ready.store(true, std::memory_order_release);
}

// The entry for a place: found, or claimed and resolved now (the first time only), or nullptr
// when its neighbourhood of the table is full.
site* find_or_add(const frame_cursor& cursor, const frame_place& place, uint64_t identity) {
  const uint64_t key = key_of(place);
  if (key == 0)
    return nullptr;
  size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 52) & (site_capacity - 1);
  for (int probe = 0; probe < site_probes; ++probe, i = (i + 1) & (site_capacity - 1)) {
    site& s = sites[i];
    uint64_t seen = s.key.load(std::memory_order_acquire);
    if (seen == 0 && s.key.compare_exchange_strong(seen, key, std::memory_order_acq_rel)) {
      resolve(s, cursor, place, identity);
      return &s;
    }
    // Same address and offset but another code object (the first one freed): another entry.
    // An entry still being resolved is taken to be this one.
    if (seen == key && (!s.ready.load(std::memory_order_acquire) || s.identity == identity))
      return &s;
  }
  return nullptr;
}

// The frames from the innermost out, `skip` of them left out, to the first that is not a
// frozen module's; its entry found or made.
__attribute__((noinline)) const void* walk(int skip) {
  frame_cursor cursor;
  frame_place place;
  bool innermost = skip == 0;
  while (cursor.next(place)) {
    if (skip > 0) {
      --skip;
      continue;
    }
    const uint64_t identity = cursor.identity(place);
    if (innermost && place.code == last_call.code && place.offset == last_call.offset &&
        identity == last_call.identity && last_call.entry != nullptr)
      return last_call.entry;
    const site* s = find_or_add(cursor, place, identity);
    if (s == nullptr)
      return nullptr;
    // An entry another thread is still resolving is taken as it is.
    if (!s->ready.load(std::memory_order_acquire))
      return s;
    if (s->transparent) {
      innermost = false;
      continue;
    }
    const site* named = s->same_line != nullptr ? s->same_line : s;
    if (innermost) {
      last_call.code = place.code;
      last_call.identity = identity;
      last_call.fields = cursor.identity_fields(place);
      last_call.entry = named;
      last_call.offset = place.offset;
      last_call.instruction = cursor.instruction(place);
    }
    return named;
  }
  return nullptr;
}

inline const void* capture(int skip) {
  if (skip == 0) {
    frame_place place;
    uint64_t identity = 0;
    if (innermost_place(place, identity) && place.code == last_call.code &&
        place.offset == last_call.offset && identity == last_call.identity &&
        last_call.entry != nullptr)
      return last_call.entry;
  }
  return walk(skip);
}

} // namespace

void start() {
  const site_setting setting = parse_site_setting(std::getenv("STRATA_PYTHON_SITES"));
  if (find_interpreter(setting) == frame_access::none)
    return;
  note_loaded_objects();
  check_layout();
  enabled = true;
}

const void* python_call_site(const void* return_address) {
  if (return_address != last_call.return_address) {
    last_call.return_address = return_address;
    last_call.extension_return_address =
        in_extension_module(reinterpret_cast<uintptr_t>(return_address)) ? return_address : nullptr;
  }
  if (last_call.extension_return_address == nullptr)
    return return_address;
  const void* site = capture(0);
  watch_thread_state();
  return site != nullptr ? site : return_address;
}

const void* current_site(int skip) {
  return enabled ? capture(skip) : nullptr;
}

bool other_thread_site(int64_t os_thread, place_text& text) {
  if (!enabled)
    return false;
  other_thread_frames frames(os_thread);
  frame_place place;
  while (frames.next(place)) {
    if (!frames.describe(place, text))
      return false;
    if (!is_frozen_module(text.file))
      return true;
  }
  return false;
}

} // namespace strata::python_sites

extern "C" __attribute__((visibility("default"))) int
strata_python_call_site(uint64_t key, const char** file, int* line, const char** function) {
  using strata::python_sites::site;
  using strata::python_sites::sites;
  const auto first = reinterpret_cast<uintptr_t>(&sites[0]);
  if (key < first || key >= first + sizeof(sites) || (key - first) % sizeof(site) != 0)
    return 0;
  const site& s = sites[(key - first) / sizeof(site)];
  if (!s.ready.load(std::memory_order_acquire)) {
    // Still being resolved by a thread caught in the middle of it: a Python place, unnamed.
    *file = "<python>";
    *line = 0;
    *function = "";
    return 1;
  }
  *file = s.file;
  *line = s.line;
  *function = s.function;
  return 1;
}
