// The CPython interpreter already running in this process, reached without linking against it:
// its C API found with dlsym, its threads' Python frames read from outside the interpreter. No
// MPI, no libpython.
//
// Two ways to read a thread's frames. For the versions whose frame layout is known (3.11, 3.12,
// 3.13; `layouts` in cpython.cpp) the frames are read directly: a few loads, no reference
// counts, no allocation, so safe whether or not the calling thread holds the GIL (a thread's
// own frames and the code objects they run cannot change or go away while it is in a call).
// That layout is trusted only after it agreed with the public C API once, with the GIL held.
// Otherwise only the public C API (PyThreadState_GetFrame, PyFrame_GetCode, PyFrame_GetLasti):
// with the GIL held by the calling thread, never without it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace strata::python_sites {

// One Python frame's place: its code object and the byte offset of the instruction it runs.
struct frame_place {
  const void* code = nullptr;
  uint32_t offset = 0;
};

// What a place means to the person who wrote the script.
struct place_text {
  std::string file;     // the code object's co_filename, as Python shows it in tracebacks
  int line = 0;         // 0 when the code has no line for the offset
  std::string function; // co_qualname ("Solver.step", "<module>")
};

enum class frame_access : uint8_t {
  none,      // no interpreter (or an unusable one): every place is unknown
  unchecked, // a known layout, not yet compared with the public API
  direct,    // the layout agreed with the public API: direct reads, with or without the GIL
  public_api // only the public API, and only with the GIL held
};

// STRATA_PYTHON_SITES: "0" turns Python call sites off, "public" keeps to the public C API.
enum class site_setting : uint8_t { on, off, public_only };
site_setting parse_site_setting(const char* value);

// Finds a running interpreter (Py_IsInitialized and the functions below, by dlsym in the whole
// process) and its layout. Returns the access it starts with.
frame_access find_interpreter(site_setting setting);

// Compares the known layout with the public API on this thread's innermost frame; only with
// the GIL held by this thread and a Python frame on its stack (else it stays unchecked, to be
// tried again). Reads during the comparison cannot fault.
frame_access check_layout();

frame_access current_access();

// Whether the thread state is read from the interpreter's runtime fields (known for 3.11 and
// checked against the calls) rather than through PyGILState_GetThisThreadState.
bool reads_runtime_fields();

// Whether the interpreter is still running (after Py_Finalize its thread states are gone).
bool interpreter_running();

// The innermost frame's place and identity (frame_cursor::identity), read directly with the
// known version's offsets as constants: the common case in a few dozen instructions. False
// when frames are not read directly (not yet, or not at all), the interpreter has stopped, or
// the innermost frame needs a closer look (a shim, no code object): frame_cursor then. The
// reader is swapped in once the layout agreed with the public API.
using place_reader = bool (*)(frame_place& place, uint64_t& identity);
extern std::atomic<place_reader> innermost_reader;

inline bool innermost_place(frame_place& place, uint64_t& identity) {
  return innermost_reader.load(std::memory_order_relaxed)(place, identity);
}

// What this thread's last call from Python was (sites.cpp writes it, the capture's fast path
// in cpython.cpp compares with it): the return address it came from and whether that lies in
// an extension module, and the innermost frame's place (code object, instruction, identity)
// with the site it gave; `code` is unseen_code until a site was found. `instruction` is the address
// the frame's instruction pointer then held (frame_cursor::instruction), which the fast path
// compares as it is instead of turning it into an offset; `fields` are what the identity is
// made of, as the code object held them (frame_cursor::identity_fields), which the fast path
// compares as they are instead of hashing them again.
struct code_fields {
  const void* filename = nullptr;
  const void* qualname = nullptr;
  int32_t first_line = 0;
};
// Whether a thread state a thread found is still there: alive from when the thread armed it
// (watch_thread_state) until the thread state is cleared, which comes before it is freed.
struct thread_state_watch {
  std::atomic<bool> alive{false};
};
extern thread_state_watch never_watched; // last_call.watch until the thread armed one

struct last_place {
  const void* return_address;
  const void* extension_return_address; // return_address if it lies in an extension, else null
  uint32_t offset;
  const void* code;
  const void* instruction;
  code_fields fields;
  uint64_t identity;
  const void* entry;
  // This thread's state as PyGILState_GetThisThreadState gave it, while `watch` is alive.
  const void* tstate;
  thread_state_watch* watch;
};
extern __thread last_place last_call __attribute__((tls_model("initial-exec")));
extern const char unseen_code[256]; // last_call.code until a site was found

// After a capture the slow way: when this thread holds the GIL and its state is not watched
// yet, puts a capsule in the thread state's dict (PyThreadState_GetDict) whose destructor marks
// the watch dead when the thread state is cleared (PyThreadState_Clear, before a thread state
// is freed: at a thread's end, PyGILState_Release, Py_FinalizeEx, after fork), so that the fast
// path reads the thread state from last_call instead of looking it up. Allocates nothing that
// collects (the collector is held off) and leaves a pending exception alone.
void watch_thread_state();
bool thread_state_watched();

// This thread's Python frames, innermost first, C-stack shims and frames that run no code
// object left out. Holds the references the public API hands out until it goes out of scope.
class frame_cursor {
public:
  frame_cursor();
  ~frame_cursor();
  frame_cursor(const frame_cursor&) = delete;
  frame_cursor& operator=(const frame_cursor&) = delete;
  bool next(frame_place& place);
  // The file, line and function of a place the cursor returned. On the public API's path
  // the code object is also kept alive for good, so that its address names it for good.
  bool describe(const frame_place& place, place_text& text) const;
  // What tells a code object from another that later took its address (a freed one's: code
  // compiled at run time): its file and name objects and first line, read directly; 0 on the
  // public API's path, whose code objects are kept alive.
  uint64_t identity(const frame_place& place) const;
  // The fields the identity is made of, read directly; all zero on the public API's path.
  code_fields identity_fields(const frame_place& place) const;
  // The address a frame's instruction pointer holds at a place, read directly; nullptr on the
  // public API's path.
  const void* instruction(const frame_place& place) const;

private:
  const void* frame_ = nullptr; // next frame to look at
  bool public_ = false;
  int steps_ = 0;
};

class careful_reader; // careful_reader.hpp

// Another thread's Python frames, innermost first, shims and frames that run no code object
// left out, read without the GIL and without that thread's help: its thread state is found by
// its OS thread id (gettid) in the interpreters' lists of thread states, and every read of a
// thread state or frame is careful (one that goes meanwhile ends the walk, it never faults).
// Meant for a thread that stays inside one call made from Python that released the GIL (a
// blocking MPI call from mpi4py: its frames stay as they are); whoever asks checks that it
// stayed, before and after (the text of a place is read from its code object, alive while the
// thread's frame holds it). Empty unless the known layout agreed with the public API, the
// thread states' list and thread ids included (check_layout).
class other_thread_frames {
public:
  explicit other_thread_frames(int64_t os_thread);
  ~other_thread_frames();
  other_thread_frames(const other_thread_frames&) = delete;
  other_thread_frames& operator=(const other_thread_frames&) = delete;
  bool next(frame_place& place);
  // The file, line and function of a place next returned (its strings' types checked first).
  bool describe(const frame_place& place, place_text& text);

private:
  std::unique_ptr<careful_reader> read_;
  const void* frame_ = nullptr; // next frame to look at
  int steps_ = 0;
};

// Whether other_thread_frames can find and read other threads (for tests).
bool other_threads_readable();

// Frames of the interpreter's frozen modules (importlib while `from mpi4py import MPI` runs
// MPI_Init, runpy under `python -m`) stand for the line that started them.
inline bool is_frozen_module(std::string_view file) {
  return file.starts_with("<frozen ");
}

// The site of the innermost frame of another thread that is not a frozen module's (sites.cpp):
// other_thread_frames' first place, as a capture on that thread would name it.
bool other_thread_site(int64_t os_thread, place_text& text);

// A Python str as UTF-8, read with PyUnicode_GetLength and PyUnicode_ReadChar only (no
// allocation inside the interpreter, so safe without the GIL for a string that stays alive).
std::string utf8_of(const void* unicode);

} // namespace strata::python_sites
