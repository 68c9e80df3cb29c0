#include "python_sites/cpython.hpp"
#include "python_sites/capture.hpp"
#include "python_sites/careful_reader.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iterator>
#include <new>
#include <sys/types.h>

// pthread_getspecific called through the GOT rather than the PLT (one jump fewer a call), where
// the compiler knows how (GCC's attribute; clang has only the whole-file -fno-plt).
#if defined(__GNUC__) && !defined(__clang__)
#define STRATA_THROUGH_GOT __attribute__((noplt))
#else
#define STRATA_THROUGH_GOT
#endif
extern "C" void* getspecific_through_got(pthread_key_t key) noexcept
    __asm__("pthread_getspecific") STRATA_THROUGH_GOT;

namespace strata::python_sites {

namespace {

// The public C API, as the interpreter exports it (all of it exists from 3.11 on).
struct c_api {
  int (*is_initialized)() = nullptr;                  // Py_IsInitialized
  void* (*this_thread_state)() = nullptr;             // PyGILState_GetThisThreadState
  int (*gil_check)() = nullptr;                       // PyGILState_Check
  void* (*thread_frame)(void*) = nullptr;             // PyThreadState_GetFrame
  void* (*frame_code)(void*) = nullptr;               // PyFrame_GetCode
  int (*frame_lasti)(void*) = nullptr;                // PyFrame_GetLasti
  void* (*frame_back)(void*) = nullptr;               // PyFrame_GetBack
  void (*incref)(void*) = nullptr;                    // Py_IncRef
  void (*decref)(void*) = nullptr;                    // Py_DecRef
  void* (*get_attr)(void*, const char*) = nullptr;    // PyObject_GetAttrString
  void (*clear_error)() = nullptr;                    // PyErr_Clear
  int (*addr_to_line)(void*, int) = nullptr;          // PyCode_Addr2Line
  ssize_t (*unicode_length)(void*) = nullptr;         // PyUnicode_GetLength
  uint32_t (*unicode_char)(void*, ssize_t) = nullptr; // PyUnicode_ReadChar
  // For the thread state's watch (watch_thread_state); optional: without them, no watch.
  void* (*current_tstate)() = nullptr;                                 // PyThreadState_GetUnchecked
  void* (*thread_dict)() = nullptr;                                    // PyThreadState_GetDict
  void* (*capsule_new)(void*, const char*, void (*)(void*)) = nullptr; // PyCapsule_New
  void* (*capsule_pointer)(void*, const char*) = nullptr;              // PyCapsule_GetPointer
  int (*dict_set)(void*, const char*, void*) = nullptr;                // PyDict_SetItemString
  void* (*error_occurred)() = nullptr;                                 // PyErr_Occurred
  int (*gc_disable)() = nullptr;                                       // PyGC_Disable
  int (*gc_enable)() = nullptr;                                        // PyGC_Enable
  // For other threads' frames (other_thread_frames); optional: without them, none.
  void* (*interpreter_head)() = nullptr;      // PyInterpreterState_Head
  void* (*interpreter_next)(void*) = nullptr; // PyInterpreterState_Next
  void* (*thread_head)(void*) = nullptr;      // PyInterpreterState_ThreadHead
  void* (*thread_next)(void*) = nullptr;      // PyThreadState_Next
  const void* code_type = nullptr;            // &PyCode_Type
  const void* unicode_type = nullptr;         // &PyUnicode_Type
};

// Where one minor version keeps a thread's innermost frame and what a frame and a code object
// hold, in bytes (x86-64, the default build; offsetof in each version's own headers).
struct layout {
  unsigned minor;
  uint16_t tstate_frame; // PyThreadState: the _PyCFrame pointer, or the frame itself (3.13)
  int16_t cframe_frame;  // _PyCFrame: current_frame; -1 when the thread state holds the frame
  uint16_t frame_code;   // _PyInterpreterFrame: f_code (3.13: f_executable)
  uint16_t frame_ip;     // prev_instr (3.13: instr_ptr): the instruction running
  uint16_t frame_previous;
  uint16_t frame_owner;
  int16_t owner_cstack;   // the owner value of C-stack shim frames (none before 3.12)
  uint16_t code_filename; // PyCodeObject: co_filename
  uint16_t code_qualname; // co_qualname
  uint16_t code_bytecode; // co_code_adaptive: where instruction offsets count from
  uint16_t code_firstlineno;
  // _PyRuntimeState (the exported _PyRuntime): where Py_IsInitialized's flag and the key of
  // PyGILState_GetThisThreadState's thread-specific slot lie (its Py_tss_t: an int, then the
  // pthread key), so that a call reads them instead of calling through three functions; -1
  // where not known (the calls then).
  int16_t runtime_initialized;
  int16_t runtime_gil_interpreter; // gilstate.autoInterpreterState: no thread states if null
  int16_t runtime_gil_key;         // gilstate.autoTSSkey
  // PyThreadState: the next in its interpreter's list, and the OS thread id (gettid) of the
  // thread it was made for (native_thread_id), for finding another thread's state.
  uint16_t tstate_next;
  uint16_t tstate_os_thread;
};

constexpr layout layouts[] = {
    {11, 56, 8, 32, 56, 48, 69, -1, 112, 128, 184, 72, 16, 584, 592, 8, 160},
    {12, 56, 0, 0, 56, 8, 70, 3, 112, 128, 192, 68, -1, -1, -1, 8, 144},
    {13, 72, -1, 0, 56, 8, 70, 3, 112, 128, 200, 68, -1, -1, -1, 8, 160},
};

#if defined(__x86_64__)
constexpr bool x86_64 = true;
#else
constexpr bool x86_64 = false;
#endif

constexpr size_t object_type = 8;       // PyObject: ob_refcnt, then ob_type
constexpr int max_frames = 256;         // a walk stops here whatever the frames say
constexpr int max_thread_states = 4096; // and a search of the thread states here

c_api api;
const layout* known = nullptr;
const char* runtime = nullptr; // &_PyRuntime, once its fields agreed with the calls
std::atomic<frame_access> access{frame_access::none};
std::atomic<bool> threads_readable{false}; // other_thread_frames can find and read threads

template <typename T> T load(const void* base, size_t offset) {
  T value;
  std::memcpy(&value, static_cast<const char*>(base) + offset, sizeof(T));
  return value;
}

const void* load_pointer(const void* base, size_t offset) {
  return load<const void*>(base, offset);
}

template <typename F> bool find_symbol(F& out, const char* name) {
  out = reinterpret_cast<F>(::dlsym(RTLD_DEFAULT, name));
  return out != nullptr;
}

bool find_api() {
  c_api a;
  bool ok = find_symbol(a.is_initialized, "Py_IsInitialized") &&
            find_symbol(a.this_thread_state, "PyGILState_GetThisThreadState") &&
            find_symbol(a.gil_check, "PyGILState_Check") &&
            find_symbol(a.thread_frame, "PyThreadState_GetFrame") &&
            find_symbol(a.frame_code, "PyFrame_GetCode") &&
            find_symbol(a.frame_lasti, "PyFrame_GetLasti") &&
            find_symbol(a.frame_back, "PyFrame_GetBack") && find_symbol(a.incref, "Py_IncRef") &&
            find_symbol(a.decref, "Py_DecRef") &&
            find_symbol(a.get_attr, "PyObject_GetAttrString") &&
            find_symbol(a.clear_error, "PyErr_Clear") &&
            find_symbol(a.addr_to_line, "PyCode_Addr2Line") &&
            find_symbol(a.unicode_length, "PyUnicode_GetLength") &&
            find_symbol(a.unicode_char, "PyUnicode_ReadChar");
  // Optional (watch_thread_state): the GIL holder's thread state (3.13's name, then the older).
  if (!find_symbol(a.current_tstate, "PyThreadState_GetUnchecked"))
    find_symbol(a.current_tstate, "_PyThreadState_UncheckedGet");
  find_symbol(a.thread_dict, "PyThreadState_GetDict");
  find_symbol(a.capsule_new, "PyCapsule_New");
  find_symbol(a.capsule_pointer, "PyCapsule_GetPointer");
  find_symbol(a.dict_set, "PyDict_SetItemString");
  find_symbol(a.error_occurred, "PyErr_Occurred");
  find_symbol(a.gc_disable, "PyGC_Disable");
  find_symbol(a.gc_enable, "PyGC_Enable");
  find_symbol(a.interpreter_head, "PyInterpreterState_Head");
  find_symbol(a.interpreter_next, "PyInterpreterState_Next");
  find_symbol(a.thread_head, "PyInterpreterState_ThreadHead");
  find_symbol(a.thread_next, "PyThreadState_Next");
  a.code_type = ::dlsym(RTLD_DEFAULT, "PyCode_Type");
  a.unicode_type = ::dlsym(RTLD_DEFAULT, "PyUnicode_Type");
  if (!ok || a.code_type == nullptr || a.unicode_type == nullptr)
    return false;
  api = a;
  return true;
}

// The innermost frame a thread state points to (direct reads).
const void* innermost_frame(const void* tstate) {
  const void* holder = load_pointer(tstate, known->tstate_frame);
  if (known->cframe_frame < 0 || holder == nullptr)
    return holder;
  return load_pointer(holder, static_cast<size_t>(known->cframe_frame));
}

bool is_shim(const void* frame) {
  return known->owner_cstack >= 0 &&
         load<uint8_t>(frame, known->frame_owner) == static_cast<uint8_t>(known->owner_cstack);
}

// The byte offset of the running instruction in `code`, if the frame's pointer lies in it.
bool offset_in(const void* code, const void* ip, uint32_t& offset) {
  const auto start = reinterpret_cast<uintptr_t>(code) + known->code_bytecode;
  const auto at = reinterpret_cast<uintptr_t>(ip);
  if (at < start || at - start >= (uintptr_t{1} << 30))
    return false;
  offset = static_cast<uint32_t>(at - start);
  return true;
}

// An attribute of an object as the object it is (the reference given back at once: the
// object it was read from keeps it alive). GIL held.
const void* attribute(void* object, const char* name) {
  void* value = api.get_attr(object, name);
  if (value == nullptr) {
    api.clear_error();
    return nullptr;
  }
  api.decref(value);
  return value;
}

// The comparison itself; false on any disagreement.
bool layout_agrees(void* public_frame) {
  careful_reader read;
  void* code = api.frame_code(public_frame);
  const int lasti = api.frame_lasti(public_frame);
  if (code == nullptr)
    return false;
  api.decref(code); // the frame keeps it
  const void* holder = nullptr;
  const void* frame = nullptr;
  if (!read.pointer(api.this_thread_state(), known->tstate_frame, holder))
    return false;
  frame = holder;
  if (known->cframe_frame >= 0 &&
      !read.pointer(holder, static_cast<size_t>(known->cframe_frame), frame))
    return false;
  // The first frame that is no shim must be the one the public API gave.
  for (int i = 0; i < 4 && frame != nullptr; ++i) {
    uint8_t owner = 0;
    if (!read.byte(frame, known->frame_owner, owner))
      return false;
    if (known->owner_cstack < 0 || owner != static_cast<uint8_t>(known->owner_cstack))
      break;
    if (!read.pointer(frame, known->frame_previous, frame))
      return false;
  }
  const void* frame_code = nullptr;
  const void* type = nullptr;
  const void* ip = nullptr;
  const void* filename = nullptr;
  const void* qualname = nullptr;
  uint32_t offset = 0;
  return read.pointer(frame, known->frame_code, frame_code) && frame_code == code &&
         read.pointer(code, object_type, type) && type == api.code_type &&
         read.pointer(frame, known->frame_ip, ip) && offset_in(code, ip, offset) &&
         static_cast<int>(offset) == lasti && read.pointer(code, known->code_filename, filename) &&
         filename == attribute(code, "co_filename") &&
         read.pointer(code, known->code_qualname, qualname) &&
         qualname == attribute(code, "co_qualname");
}

// The thread state of the thread whose OS id is `os_thread`, from the interpreters' lists (the
// functions debuggers use, plain loads of the runtime's and interpreters' fields) and careful
// reads of each thread state's id and link; nullptr when none is found.
const void* find_thread_state(careful_reader& read, uint64_t os_thread) {
  if (api.interpreter_head == nullptr || api.interpreter_next == nullptr ||
      api.thread_head == nullptr || !interpreter_running())
    return nullptr;
  int steps = 0;
  for (void* interpreter = api.interpreter_head();
       interpreter != nullptr && steps < max_thread_states;
       interpreter = api.interpreter_next(interpreter)) {
    const void* tstate = api.thread_head(interpreter);
    while (tstate != nullptr && steps++ < max_thread_states) {
      uint64_t id = 0;
      if (!read.uint64(tstate, known->tstate_os_thread, id))
        return nullptr;
      if (id == os_thread)
        return tstate;
      if (!read.pointer(tstate, known->tstate_next, tstate))
        return nullptr;
    }
  }
  return nullptr;
}

// Whether the thread states' link and thread id lie where the layout says: this thread's
// state, found by its id, is the one the public API gives, and its link is PyThreadState_Next's
// (GIL held).
bool thread_list_agrees() {
  void* own = api.this_thread_state();
  careful_reader read;
  const void* next = nullptr;
  return own != nullptr && api.thread_next != nullptr &&
         read.pointer(own, known->tstate_next, next) && next == api.thread_next(own) &&
         find_thread_state(read, static_cast<uint64_t>(::syscall(SYS_gettid))) == own;
}

// What identifies a code object beside its address (frame_cursor::identity), from its file
// and name objects and first line as a layout places them.
template <typename Layout> uint64_t identity_with(const Layout& l, const void* code) {
  const auto filename = reinterpret_cast<uintptr_t>(load_pointer(code, l.code_filename));
  const auto qualname = reinterpret_cast<uintptr_t>(load_pointer(code, l.code_qualname));
  const auto line = static_cast<uint64_t>(load<int>(code, l.code_firstlineno));
  return (filename ^ (qualname << 1) ^ (line * 0x9E3779B97F4A7C15ull)) | 1;
}

uint64_t identity_of(const void* code) {
  return identity_with(*known, code);
}

// The same fields as they are (the fast path compares them instead of hashing them).
template <typename Layout> code_fields fields_with(const Layout& l, const void* code) {
  return {load_pointer(code, l.code_filename), load_pointer(code, l.code_qualname),
          load<int32_t>(code, l.code_firstlineno)};
}

// This thread's state as PyGILState_GetThisThreadState gives it, read from the runtime's
// fields: the flag, then the slot (one call, to pthread_getspecific, instead of three). The flag
// alone stands for the interpreter too: Py_Initialize sets it last, after the GIL state's
// interpreter and key exist, and Py_FinalizeEx clears it first, before any thread state is
// freed and before the key is deleted (runtime_agrees saw both once).
template <size_t Index> const void* thread_state_from_runtime() {
  static constexpr const layout& L = layouts[Index];
  static_assert(L.runtime_initialized >= 0 && L.runtime_gil_interpreter >= 0 &&
                L.runtime_gil_key >= 0);
  if (load<int32_t>(runtime, L.runtime_initialized) == 0)
    return nullptr; // after Py_Finalize its thread states are gone
  return getspecific_through_got(load<pthread_key_t>(runtime, L.runtime_gil_key + sizeof(int32_t)));
}

// Whether the runtime's fields say what the calls say (GIL held, reads that cannot fault).
bool runtime_agrees(const layout& l, const char* candidate) {
  if (candidate == nullptr || l.runtime_initialized < 0)
    return false;
  careful_reader read;
  int32_t initialized = 0, key_made = 0, key = 0;
  const void* interpreter = nullptr;
  if (!read.int32(candidate, static_cast<size_t>(l.runtime_initialized), initialized) ||
      !read.pointer(candidate, static_cast<size_t>(l.runtime_gil_interpreter), interpreter) ||
      !read.int32(candidate, static_cast<size_t>(l.runtime_gil_key), key_made) ||
      !read.int32(candidate, static_cast<size_t>(l.runtime_gil_key) + 4, key))
    return false;
  const void* tstate = api.this_thread_state();
  return initialized == api.is_initialized() && initialized == 1 && interpreter != nullptr &&
         key_made == 1 && tstate != nullptr &&
         ::pthread_getspecific(static_cast<pthread_key_t>(key)) == tstate;
}

// The innermost frame a thread state points to for one known version (a shim perhaps, or
// nullptr when no Python frame runs): one or two loads.
template <size_t Index>
__attribute__((always_inline)) inline const void* frame_of_thread_state(const void* tstate) {
  static constexpr const layout& l = layouts[Index];
  // A thread state's _PyCFrame pointer is never null: its own root_cframe from the start.
  const void* frame = load_pointer(tstate, l.tstate_frame);
  if constexpr (l.cframe_frame >= 0)
    frame = load_pointer(frame, static_cast<size_t>(l.cframe_frame));
  return frame;
}

// This thread's state looked up (no watch alive): from the runtime's fields or through the
// calls; nullptr after Py_Finalize or on a thread the interpreter does not know.
template <size_t Index, bool FromRuntime> const void* looked_up_thread_state() {
  if constexpr (FromRuntime) {
    return thread_state_from_runtime<Index>();
  } else {
    if (api.is_initialized() == 0)
      return nullptr; // after Py_Finalize its thread states are gone
    return api.this_thread_state();
  }
}

// This thread's innermost frame for one known version (a shim perhaps), or nullptr: the thread
// state (kept while its watch lives, else looked up), then one or two loads.
template <size_t Index, bool FromRuntime>
__attribute__((always_inline)) inline const void* innermost_frame_with_layout() {
  if (last_call.watch->alive.load(std::memory_order_relaxed))
    return frame_of_thread_state<Index>(last_call.tstate); // alive until cleared, never null
  const void* tstate = looked_up_thread_state<Index, FromRuntime>();
  return tstate != nullptr ? frame_of_thread_state<Index>(tstate) : nullptr;
}

// innermost_place for one known version, its offsets compile-time constants (the same reads as
// frame_cursor's direct path).
template <size_t Index, bool FromRuntime>
bool place_with_layout(frame_place& place, uint64_t& identity) {
  static constexpr const layout& l = layouts[Index];
  const void* frame = innermost_frame_with_layout<Index, FromRuntime>();
  if (frame == nullptr)
    return false;
  if constexpr (l.owner_cstack >= 0)
    if (load<uint8_t>(frame, l.frame_owner) == static_cast<uint8_t>(l.owner_cstack))
      return false; // a shim: frame_cursor looks further
  const void* code = load_pointer(frame, l.frame_code);
  if (code == nullptr || load_pointer(code, object_type) != api.code_type)
    return false;
  const auto start = reinterpret_cast<uintptr_t>(code) + l.code_bytecode;
  const auto at = reinterpret_cast<uintptr_t>(load_pointer(frame, l.frame_ip));
  if (at < start || at - start >= (uintptr_t{1} << 30))
    return false;
  place.code = code;
  place.offset = static_cast<uint32_t>(at - start);
  identity = identity_with(l, code);
  return true;
}

// The last call's site if `frame` (this thread's innermost, or nullptr) runs the same place as
// the thread's last call, else python_call_site. The frame is compared with what the thread's
// last call saw (a code object of the same address and identity, the instruction pointer at the
// same address), not checked on its own: a frame of this thread that runs the code object the
// last call found is a live one (the frame holds it), so no type check, no range check and no
// look at the table. last_call.code is never null (unseen_code until a site was found), so a
// frame's code equal to it is a code object. The identity's fields are compared as the last
// call stored them, read through last_call.code (equal to the frame's, but known before the
// frame is: the loads need not wait for the walk from the thread state).
template <size_t Index>
__attribute__((always_inline)) inline const void* site_if_repeated(const void* frame) {
  static constexpr const layout& l = layouts[Index];
  if (__builtin_expect(frame != nullptr, 1) &&
      load_pointer(frame, l.frame_code) == last_call.code &&
      load_pointer(frame, l.frame_ip) == last_call.instruction) {
    const void* code = last_call.code;
    const code_fields& seen = last_call.fields;
    if (load_pointer(code, l.code_filename) == seen.filename &&
        load_pointer(code, l.code_qualname) == seen.qualname &&
        load<int32_t>(code, l.code_firstlineno) == seen.first_line)
      return last_call.entry;
  }
  return python_call_site(last_call.return_address);
}

// repeated_site when no watch keeps the thread state: looked up first (out of line, so that the
// usual call keeps nothing across the lookup and needs no frame of its own).
template <size_t Index, bool FromRuntime> __attribute__((noinline)) const void* site_looked_up() {
  const void* tstate = looked_up_thread_state<Index, FromRuntime>();
  return site_if_repeated<Index>(tstate != nullptr ? frame_of_thread_state<Index>(tstate)
                                                   : nullptr);
}

// The call path's capture for one known version (capture_site, capture.hpp): a call from the
// same return address and the same place as this thread's last call gives its site again
// (site_if_repeated), from the thread state its watch keeps (never null while the watch lives).
// Anything else goes to python_call_site.
template <size_t Index, bool FromRuntime> const void* repeated_site(const void* return_address) {
  if (__builtin_expect(return_address != last_call.extension_return_address, 0))
    return python_call_site(return_address); // a new address, or one outside the extensions
  if (__builtin_expect(!last_call.watch->alive.load(std::memory_order_relaxed), 0))
    return site_looked_up<Index, FromRuntime>();
  return site_if_repeated<Index>(frame_of_thread_state<Index>(last_call.tstate));
}

bool no_direct_reads(frame_place& /*place*/, uint64_t& /*identity*/) {
  return false;
}

static_assert(std::size(layouts) == 3, "one place_with_layout per known layout");
constexpr place_reader place_readers[] = {
    &place_with_layout<0, false>, &place_with_layout<1, false>, &place_with_layout<2, false>};
// The same reading the thread state from _PyRuntime, where its fields are known.
constexpr place_reader runtime_readers[] = {&place_with_layout<0, true>, nullptr, nullptr};
constexpr site_capture repeated_sites[] = {&repeated_site<0, false>, &repeated_site<1, false>,
                                           &repeated_site<2, false>};
constexpr site_capture runtime_repeated_sites[] = {&repeated_site<0, true>, nullptr, nullptr};
place_reader direct_reader = nullptr;  // the known layout's, set with `known`
place_reader runtime_reader = nullptr; // the same from _PyRuntime, or nullptr
site_capture direct_capture = nullptr; // repeated_site for the known layout
site_capture runtime_capture = nullptr;

} // namespace

site_setting parse_site_setting(const char* value) {
  if (value == nullptr || value[0] == '\0')
    return site_setting::on;
  if (std::strcmp(value, "0") == 0 || std::strcmp(value, "off") == 0)
    return site_setting::off;
  if (std::strcmp(value, "public") == 0)
    return site_setting::public_only;
  return site_setting::on;
}

std::atomic<place_reader> innermost_reader{&no_direct_reads};

frame_access find_interpreter(site_setting setting) {
  innermost_reader = &no_direct_reads;
  __atomic_store_n(&capture_site, &python_call_site, __ATOMIC_RELAXED);
  if (setting == site_setting::off || !find_api())
    return access = frame_access::none;
  // Py_Version exists from 3.11 on, as does everything above.
  const auto* version = static_cast<const unsigned long*>(::dlsym(RTLD_DEFAULT, "Py_Version"));
  if (version == nullptr || (*version >> 24) != 3 || ((*version >> 16) & 0xff) < 11)
    return access = frame_access::none;
  const unsigned minor = (*version >> 16) & 0xff;
  known = nullptr;
  for (size_t i = 0; i < std::size(layouts); ++i)
    if (layouts[i].minor == minor) {
      known = &layouts[i];
      direct_reader = place_readers[i];
      runtime_reader = runtime_readers[i];
      direct_capture = repeated_sites[i];
      runtime_capture = runtime_repeated_sites[i];
    }
  const bool direct_possible = known != nullptr && setting == site_setting::on && x86_64;
  return access = direct_possible ? frame_access::unchecked : frame_access::public_api;
}

frame_access check_layout() {
  if (access != frame_access::unchecked || !interpreter_running() || api.gil_check() != 1)
    return access;
  void* frame = api.thread_frame(api.this_thread_state());
  if (frame == nullptr)
    return access; // no Python on this thread's stack yet: another time
  const bool agrees = layout_agrees(frame);
  api.decref(frame);
  if (agrees) {
    threads_readable = thread_list_agrees();
    const auto* candidate = static_cast<const char*>(::dlsym(RTLD_DEFAULT, "_PyRuntime"));
    if (runtime_reader != nullptr && runtime_agrees(*known, candidate)) {
      runtime = candidate;
      innermost_reader = runtime_reader;
      __atomic_store_n(&capture_site, runtime_capture, __ATOMIC_RELAXED);
    } else {
      innermost_reader = direct_reader;
      __atomic_store_n(&capture_site, direct_capture, __ATOMIC_RELAXED);
    }
  }
  return access = agrees ? frame_access::direct : frame_access::public_api;
}

frame_access current_access() {
  return access.load(std::memory_order_relaxed);
}

bool reads_runtime_fields() {
  return innermost_reader.load(std::memory_order_relaxed) == runtime_reader &&
         runtime_reader != nullptr;
}

bool interpreter_running() {
  return api.is_initialized != nullptr && api.is_initialized() != 0;
}

namespace {
constexpr char watch_name[] = "strata.python_sites.thread_state_watch";

void thread_state_cleared(void* capsule) {
  auto* watch = static_cast<thread_state_watch*>(api.capsule_pointer(capsule, watch_name));
  if (watch != nullptr)
    watch->alive.store(false, std::memory_order_relaxed);
}
} // namespace

void watch_thread_state() {
  if (last_call.watch->alive.load(std::memory_order_relaxed) ||
      current_access() != frame_access::direct || api.current_tstate == nullptr ||
      api.thread_dict == nullptr || api.capsule_new == nullptr || api.capsule_pointer == nullptr ||
      api.dict_set == nullptr || api.error_occurred == nullptr || api.gc_disable == nullptr ||
      api.gc_enable == nullptr || !interpreter_running())
    return;
  void* tstate = api.this_thread_state();
  // The GIL holder's thread state is this thread's (PyGILState_Check says yes whenever
  // subinterpreters exist), and no exception is pending that clearing ours would lose.
  if (tstate == nullptr || api.current_tstate() != tstate || api.error_occurred() != nullptr)
    return;
  // A dead watch is this thread's alone (its capsule is gone): used again.
  thread_state_watch* watch = last_call.watch;
  if (watch == &never_watched)
    watch = new (std::nothrow) thread_state_watch;
  if (watch == nullptr)
    return;
  const int collecting = api.gc_disable(); // a collection would run finalizers inside the call
  void* dict = api.thread_dict();
  void* capsule =
      dict != nullptr ? api.capsule_new(watch, watch_name, &thread_state_cleared) : nullptr;
  if (capsule != nullptr) {
    watch->alive.store(true, std::memory_order_relaxed);
    if (api.dict_set(dict, watch_name, capsule) != 0)
      watch->alive.store(false, std::memory_order_relaxed);
    api.decref(capsule); // the dict holds it, or it goes now
  }
  if (api.error_occurred() != nullptr)
    api.clear_error(); // ours: none was pending
  if (collecting != 0)
    api.gc_enable();
  last_call.tstate = tstate;
  last_call.watch = watch;
}

bool thread_state_watched() {
  return last_call.watch->alive.load(std::memory_order_relaxed);
}

frame_cursor::frame_cursor() {
  frame_access a = access.load(std::memory_order_relaxed);
  if (a == frame_access::none || !interpreter_running())
    return;
  if (a == frame_access::unchecked)
    a = check_layout();
  void* tstate = api.this_thread_state();
  if (tstate == nullptr)
    return; // a thread the interpreter does not know
  if (a == frame_access::direct) {
    frame_ = innermost_frame(tstate);
  } else if (a == frame_access::public_api && api.gil_check() == 1) {
    frame_ = api.thread_frame(tstate);
    public_ = true;
  }
}

frame_cursor::~frame_cursor() {
  if (public_ && frame_ != nullptr)
    api.decref(const_cast<void*>(frame_));
}

bool frame_cursor::next(frame_place& place) {
  while (frame_ != nullptr && steps_++ < max_frames) {
    if (public_) {
      auto* frame = const_cast<void*>(frame_);
      void* code = api.frame_code(frame);
      const int lasti = api.frame_lasti(frame);
      frame_ = api.frame_back(frame);
      api.decref(frame);
      if (code == nullptr)
        continue;
      api.decref(code); // its frame, running, keeps it
      place = {code, static_cast<uint32_t>(lasti < 0 ? 0 : lasti)};
      return true;
    }
    const void* frame = frame_;
    frame_ = load_pointer(frame, known->frame_previous);
    if (is_shim(frame))
      continue;
    const void* code = load_pointer(frame, known->frame_code);
    if (code == nullptr || load_pointer(code, object_type) != api.code_type)
      continue;
    if (offset_in(code, load_pointer(frame, known->frame_ip), place.offset)) {
      place.code = code;
      return true;
    }
  }
  frame_ = nullptr;
  return false;
}

bool frame_cursor::describe(const frame_place& place, place_text& text) const {
  auto* code = const_cast<void*>(place.code);
  const void* filename = nullptr;
  const void* qualname = nullptr;
  if (public_) {
    api.incref(code);
    filename = attribute(code, "co_filename");
    qualname = attribute(code, "co_qualname");
  } else {
    filename = load_pointer(code, known->code_filename);
    qualname = load_pointer(code, known->code_qualname);
  }
  if (filename == nullptr)
    return false;
  text.file = utf8_of(filename);
  text.function = qualname != nullptr ? utf8_of(qualname) : std::string();
  text.line = api.addr_to_line(code, static_cast<int>(place.offset));
  if (text.line < 0)
    text.line = 0;
  return !text.file.empty();
}

uint64_t frame_cursor::identity(const frame_place& place) const {
  return public_ ? 0 : identity_of(place.code);
}

code_fields frame_cursor::identity_fields(const frame_place& place) const {
  return public_ ? code_fields{} : fields_with(*known, place.code);
}

const void* frame_cursor::instruction(const frame_place& place) const {
  if (public_)
    return nullptr;
  return static_cast<const char*>(place.code) + known->code_bytecode + place.offset;
}

other_thread_frames::other_thread_frames(int64_t os_thread) {
  if (!threads_readable.load(std::memory_order_acquire) || os_thread <= 0)
    return;
  read_ = std::make_unique<careful_reader>();
  const void* tstate = find_thread_state(*read_, static_cast<uint64_t>(os_thread));
  const void* holder = nullptr;
  if (tstate == nullptr || !read_->pointer(tstate, known->tstate_frame, holder))
    return;
  frame_ = holder;
  if (known->cframe_frame >= 0 &&
      !read_->pointer(holder, static_cast<size_t>(known->cframe_frame), frame_))
    frame_ = nullptr;
}

other_thread_frames::~other_thread_frames() = default;

bool other_thread_frames::next(frame_place& place) {
  while (frame_ != nullptr && steps_++ < max_frames) {
    const void* frame = frame_;
    uint8_t owner = 0;
    const void* code = nullptr;
    const void* type = nullptr;
    const void* ip = nullptr;
    if (!read_->pointer(frame, known->frame_previous, frame_) ||
        !read_->byte(frame, known->frame_owner, owner))
      break;
    if (known->owner_cstack >= 0 && owner == static_cast<uint8_t>(known->owner_cstack))
      continue; // a shim
    if (!read_->pointer(frame, known->frame_code, code) || code == nullptr ||
        !read_->pointer(code, object_type, type) || type != api.code_type)
      continue;
    if (read_->pointer(frame, known->frame_ip, ip) && offset_in(code, ip, place.offset)) {
      place.code = code;
      return true;
    }
  }
  frame_ = nullptr;
  return false;
}

bool other_thread_frames::describe(const frame_place& place, place_text& text) {
  const void* filename = nullptr;
  const void* qualname = nullptr;
  const void* type = nullptr;
  if (!read_->pointer(place.code, known->code_filename, filename) ||
      !read_->pointer(filename, object_type, type) || type != api.unicode_type)
    return false;
  if (!read_->pointer(place.code, known->code_qualname, qualname) ||
      !read_->pointer(qualname, object_type, type) || type != api.unicode_type)
    qualname = nullptr;
  text.file = utf8_of(filename);
  text.function = qualname != nullptr ? utf8_of(qualname) : std::string();
  // PyCode_Addr2Line reads the code object's line table: no allocation, no GIL needed.
  text.line =
      std::max(api.addr_to_line(const_cast<void*>(place.code), static_cast<int>(place.offset)), 0);
  return !text.file.empty();
}

bool other_threads_readable() {
  return threads_readable.load(std::memory_order_acquire);
}

std::string utf8_of(const void* unicode) {
  std::string out;
  if (unicode == nullptr || load_pointer(unicode, object_type) != api.unicode_type)
    return out;
  auto* object = const_cast<void*>(unicode);
  const ssize_t length = api.unicode_length(object);
  for (ssize_t i = 0; i < length && i < 4096; ++i) {
    const uint32_t c = api.unicode_char(object, i);
    if (c >= 0xD800 && c < 0xE000) {
      out += '?'; // a lone surrogate (undecodable bytes in a path): not valid UTF-8
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x110000) {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

} // namespace strata::python_sites
