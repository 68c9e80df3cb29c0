#include "counters.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <utility>

#ifdef STRATA_HAVE_PAPI
#include "common/on_demand_library.hpp"

#include <papi.h>
static_assert(PAPI_NULL == -1, "counter_set::papi_set_ starts as -1");
#endif

namespace strata::counters {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

struct generic_event {
  const char* name;
  uint32_t type;
  uint64_t config;
};

// The events every Linux kernel names the same way (perf list's generic ones).
constexpr generic_event generic_events[] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
};

// "perf:TYPE:CONFIG" (config decimal or 0x-hex), for events the table lacks.
bool parse_raw(const std::string& name, generic_event& ev) {
  if (name.rfind("perf:", 0) != 0 || name.size() < 6 || !std::isdigit(uint8_t(name[5]))) {
    return false;
  }
  char* end = nullptr;
  unsigned long type = std::strtoul(name.c_str() + 5, &end, 10);
  if (*end != ':' || !std::isdigit(uint8_t(end[1]))) {
    return false;
  }
  const char* cfg = end + 1;
  ev = {nullptr, uint32_t(type), std::strtoull(cfg, &end, 0)};
  return *end == '\0' && type <= UINT32_MAX;
}

bool find_generic(const std::string& name, generic_event& ev) {
  std::string n = lower(name);
  for (const auto& g : generic_events) {
    if (n == g.name) {
      ev = g;
      return true;
    }
  }
  return parse_raw(n, ev);
}

std::string known_names() {
  std::string s;
  for (const auto& g : generic_events) {
    s += g.name;
    s += ", ";
  }
  return s + "perf:TYPE:CONFIG or a PAPI event name";
}

// Nanoseconds, whichever layer counts it: PAPI's native name is "perf::TASK-CLOCK[:mods]".
bool counts_ns(const std::string& name) {
  std::string n = lower(name);
  if (n.rfind("perf::", 0) == 0) {
    n.erase(0, 6);
  }
  n = n.substr(0, n.find(':'));
  return n == "task-clock" || n == "cpu-clock";
}

// One problem line per cause, naming every event it hit: the missing PMU is said once.
struct causes {
  std::vector<std::pair<std::string, std::string>> lines; // why, names
  void add(const std::string& name, const std::string& why) {
    for (auto& [w, n] : lines) {
      if (w == why) {
        n += ", " + name;
        return;
      }
    }
    lines.emplace_back(why, name);
  }
};

std::string paranoid_level() {
  char buf[16] = {};
  int fd = ::open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? ::read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) {
    ::close(fd);
  }
  std::string s(buf, size_t(n > 0 ? n : 0));
  return "perf_event_paranoid=" + (s.empty() ? "?" : s.substr(0, s.find('\n')));
}

#ifdef STRATA_HAVE_PAPI
bool is_raw(const std::string& name) {
  generic_event ev{};
  return parse_raw(lower(name), ev);
}

// PAPI's functions the counters use, from the library loaded on first need (CMakeLists.txt).
struct papi_functions {
  decltype(&PAPI_library_init) library_init = nullptr;
  decltype(&PAPI_strerror) strerror = nullptr;
  decltype(&PAPI_get_component_index) get_component_index = nullptr;
  decltype(&PAPI_get_component_info) get_component_info = nullptr;
  decltype(&PAPI_create_eventset) create_eventset = nullptr;
  decltype(&PAPI_assign_eventset_component) assign_eventset_component = nullptr;
  decltype(&PAPI_set_opt) set_opt = nullptr;
  decltype(&PAPI_event_name_to_code) event_name_to_code = nullptr;
  decltype(&PAPI_add_event) add_event = nullptr;
  decltype(&PAPI_start) start = nullptr;
  decltype(&PAPI_read) read = nullptr;
  decltype(&PAPI_stop) stop = nullptr;
  decltype(&PAPI_cleanup_eventset) cleanup_eventset = nullptr;
  decltype(&PAPI_destroy_eventset) destroy_eventset = nullptr;
};

// Loads PAPI, or says in `problem` why not.
papi_functions load_papi(std::string& problem) {
  common::on_demand_library library(STRATA_PAPI_SONAME);
  papi_functions f;
  library.bind("PAPI_library_init", f.library_init);
  library.bind("PAPI_strerror", f.strerror);
  library.bind("PAPI_get_component_index", f.get_component_index);
  library.bind("PAPI_get_component_info", f.get_component_info);
  library.bind("PAPI_create_eventset", f.create_eventset);
  library.bind("PAPI_assign_eventset_component", f.assign_eventset_component);
  library.bind("PAPI_set_opt", f.set_opt);
  library.bind("PAPI_event_name_to_code", f.event_name_to_code);
  library.bind("PAPI_add_event", f.add_event);
  library.bind("PAPI_start", f.start);
  library.bind("PAPI_read", f.read);
  library.bind("PAPI_stop", f.stop);
  library.bind("PAPI_cleanup_eventset", f.cleanup_eventset);
  library.bind("PAPI_destroy_eventset", f.destroy_eventset);
  if (!library.ok()) {
    problem = "PAPI: " + library.problem() + "; using perf_event";
  }
  return f;
}

struct papi_state {
  papi_functions call;
  int cidx = -1; // the perf_event component, when usable
  std::string problem;
};

// Once per process: PAPI_library_init scans every component (milliseconds), and the answer
// cannot change while the process runs.
const papi_state& papi() {
  static const papi_state state = [] {
    papi_state s;
    s.call = load_papi(s.problem);
    if (!s.problem.empty()) {
      return s;
    }
    int v = s.call.library_init(PAPI_VER_CURRENT);
    if (v != PAPI_VER_CURRENT) {
      s.problem = std::string("PAPI: PAPI_library_init failed (") +
                  (v < 0 ? s.call.strerror(v) : "version mismatch") + "); using perf_event";
      return s;
    }
    int cidx = s.call.get_component_index("perf_event");
    const PAPI_component_info_t* c = cidx >= 0 ? s.call.get_component_info(cidx) : nullptr;
    if (c == nullptr || c->disabled != PAPI_OK) {
      std::string why = c == nullptr ? "no perf_event component" : c->disabled_reason;
      // libpfm4 disables the whole component, software events included, without a PMU.
      s.problem = why.find("PMU") != std::string::npos
                      ? "PAPI: no hardware counters on this machine (" + why + "); using perf_event"
                      : "PAPI: perf_event component disabled (" + why + "); using perf_event";
      return s;
    }
    s.cidx = cidx;
    return s;
  }();
  return state;
}

void destroy_papi_set(int& set) {
  if (set != PAPI_NULL) {
    const papi_functions& call = papi().call; // a set exists only once PAPI is loaded
    call.stop(set, nullptr);
    call.cleanup_eventset(set);
    call.destroy_eventset(&set);
    set = PAPI_NULL;
  }
}

// An event set holding those of `names` PAPI can count; taken[i] is the position or -1.
// Kernel mode is counted where the kernel allows it (context switches happen there).
// Why PAPI refused a name it knows goes to errors[i], for when perf_event cannot count it either.
int open_papi(const std::vector<std::string>& names, std::vector<int>& taken,
              std::vector<std::string>& errors, std::vector<std::string>& problems) {
  const auto& st = papi();
  if (st.cidx < 0) {
    problems.push_back(st.problem);
    return PAPI_NULL;
  }
  int rc = PAPI_OK;
  for (int domain : {PAPI_DOM_USER | PAPI_DOM_KERNEL, PAPI_DOM_USER}) {
    int set = PAPI_NULL, n = 0;
    PAPI_option_t opt{};
    bool ready = st.call.create_eventset(&set) == PAPI_OK &&
                 st.call.assign_eventset_component(set, st.cidx) == PAPI_OK;
    opt.domain.eventset = set;
    opt.domain.domain = domain;
    ready = ready && st.call.set_opt(PAPI_DOMAIN, &opt) == PAPI_OK;
    for (size_t i = 0; ready && i < names.size(); ++i) {
      int code = 0;
      if (is_raw(names[i]) || st.call.event_name_to_code(names[i].c_str(), &code) != PAPI_OK) {
        continue;
      }
      if (int added = st.call.add_event(set, code); added == PAPI_OK) {
        taken[i] = n++;
      } else {
        errors[i] = std::string("PAPI_add_event: ") + st.call.strerror(added);
      }
    }
    if (n > 0 && (rc = st.call.start(set)) == PAPI_OK) {
      if (domain == PAPI_DOM_USER) {
        problems.push_back("PAPI: kernel mode not permitted here; counting user mode only");
      }
      return set;
    }
    destroy_papi_set(set);
    std::fill(taken.begin(), taken.end(), -1);
    if (ready && n == 0) {
      return PAPI_NULL; // PAPI knows none of the names: they are perf_event's
    }
  }
  if (rc != PAPI_OK) {
    problems.push_back(std::string("PAPI: PAPI_start failed (") + st.call.strerror(rc) +
                       "); using perf_event");
  }
  return PAPI_NULL;
}
#endif

int perf_open(perf_event_attr& attr, int group_fd) {
  return int(syscall(SYS_perf_event_open, &attr, 0 /* this thread */, -1 /* any cpu */, group_fd,
                     PERF_FLAG_FD_CLOEXEC));
}

} // namespace

event_list parse_event_list(std::string_view text) {
  event_list out;
  bool has_comma = text.find(',') != std::string_view::npos;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = std::min(text.find(',', pos), text.size());
    std::string_view piece = text.substr(pos, comma - pos);
    size_t before = out.names.size();
    for (size_t i = 0; i < piece.size();) {
      size_t j = i;
      while (j < piece.size() && !is_blank(piece[j])) {
        ++j;
      }
      if (j > i) {
        out.names.emplace_back(piece.substr(i, j - i));
      }
      i = j + 1;
    }
    if (has_comma && out.names.size() == before) {
      return {{}, "empty counter name in '" + std::string(text) + "'"};
    }
    pos = comma + 1;
  }
  for (size_t i = 0; i < out.names.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (lower(out.names[i]) == lower(out.names[j])) {
        return {{}, "counter '" + out.names[i] + "' listed twice in '" + std::string(text) + "'"};
      }
    }
  }
  return out;
}

counter_set counter_set::open(const std::vector<std::string>& names,
                              std::vector<std::string>& problems) {
  counter_set s;
  std::vector<int> papi_pos(names.size(), -1), perf_pos(names.size(), -1);
  std::vector<std::string> papi_err(names.size());
#ifdef STRATA_HAVE_PAPI
  // Raw perf:TYPE:CONFIG names mean perf_event; PAPI is initialised only for the others.
  if (!std::all_of(names.begin(), names.end(), is_raw)) {
    s.papi_set_ = open_papi(names, papi_pos, papi_err, problems);
    s.papi_buf_.resize(
        size_t(std::count_if(papi_pos.begin(), papi_pos.end(), [](int p) { return p >= 0; })));
  }
#endif
  causes why;
  for (size_t i = 0; i < names.size(); ++i) {
    if (papi_pos[i] >= 0) {
      continue;
    }
    generic_event ev{};
    if (!find_generic(names[i], ev)) {
      why.add(names[i], papi_err[i].empty() ? "unknown counter (known: " + known_names() + ")"
                                            : papi_err[i] + "; not counted");
      continue;
    }
    perf_event_attr attr{};
    attr.size = sizeof attr;
    attr.type = ev.type;
    attr.config = ev.config;
    attr.read_format = PERF_FORMAT_GROUP;
    attr.disabled = s.fds_.empty(); // the leader starts the whole group at once, below
    int fd = perf_open(attr, s.fds_.empty() ? -1 : s.fds_[0]);
    int err = fd < 0 ? errno : 0;
    bool software = ev.type == PERF_TYPE_SOFTWARE;
    bool kernel_only = software && (ev.config == PERF_COUNT_SW_CONTEXT_SWITCHES ||
                                    ev.config == PERF_COUNT_SW_CPU_MIGRATIONS);
    bool denied = err == EACCES || err == EPERM;
    if (denied && kernel_only) {
      // These happen in the kernel only: counted in user mode they would always read 0.
      why.add(names[i], "kernel-mode event not permitted (" + paranoid_level() + "); not counted");
      continue;
    }
    if (denied) {
      // perf_event_paranoid 2 leaves unprivileged users their own user-mode events.
      attr.exclude_kernel = attr.exclude_hv = 1;
      fd = perf_open(attr, s.fds_.empty() ? -1 : s.fds_[0]);
      err = fd < 0 ? errno : 0;
      // The clocks count the thread's whole run time in either mode.
      if (fd >= 0 && !(software && (ev.config == PERF_COUNT_SW_TASK_CLOCK ||
                                    ev.config == PERF_COUNT_SW_CPU_CLOCK))) {
        why.add(names[i],
                "kernel mode not permitted (" + paranoid_level() + "); counting user mode only");
      }
    }
    if (fd >= 0) {
      perf_pos[i] = int(s.fds_.size());
      s.fds_.push_back(fd);
    } else if (!software && ev.type != PERF_TYPE_TRACEPOINT &&
               (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)) {
      why.add(names[i], std::string("no hardware PMU on this machine (perf_event_open: ") +
                            std::strerror(err) + "); not counted");
    } else {
      std::string e = std::strerror(err);
      if (err == EACCES || err == EPERM) {
        e += ", " + paranoid_level();
      }
      why.add(names[i], "perf_event_open: " + e + "; not counted");
    }
  }
  for (const auto& [w, n] : why.lines) {
    problems.push_back(n + ": " + w);
  }
  if (!s.fds_.empty()) {
    ioctl(s.fds_[0], PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
    ioctl(s.fds_[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
    s.perf_buf_.resize(1 + s.fds_.size());
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (papi_pos[i] >= 0 || perf_pos[i] >= 0) {
      s.names_.push_back(names[i]);
      s.ns_.push_back(counts_ns(names[i]));
      s.slots_.push_back(
          {papi_pos[i] >= 0, uint32_t(papi_pos[i] >= 0 ? papi_pos[i] : perf_pos[i])});
    }
  }
  return s;
}

bool counter_set::read(uint64_t* values) noexcept {
#ifdef STRATA_HAVE_PAPI
  if (papi_set_ != PAPI_NULL && papi().call.read(papi_set_, papi_buf_.data()) != PAPI_OK) {
    return false;
  }
#endif
  if (!fds_.empty()) {
    // PERF_FORMAT_GROUP: the leader's read() returns every member's value in one syscall.
    auto bytes = ssize_t(perf_buf_.size() * sizeof(uint64_t));
    if (::read(fds_[0], perf_buf_.data(), size_t(bytes)) != bytes) {
      return false;
    }
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    values[i] = slots_[i].papi ? uint64_t(papi_buf_[slots_[i].pos]) : perf_buf_[1 + slots_[i].pos];
  }
  return true;
}

void counter_set::close() noexcept {
#ifdef STRATA_HAVE_PAPI
  destroy_papi_set(papi_set_);
#endif
  for (int fd : fds_) {
    ::close(fd);
  }
  fds_.clear();
}

counter_set::counter_set(counter_set&& other) noexcept {
  *this = std::move(other);
}

counter_set& counter_set::operator=(counter_set&& other) noexcept {
  if (this != &other) {
    close();
    names_ = std::exchange(other.names_, {});
    ns_ = std::exchange(other.ns_, {});
    slots_ = std::exchange(other.slots_, {});
    fds_ = std::exchange(other.fds_, {});
    perf_buf_ = std::exchange(other.perf_buf_, {});
    papi_set_ = std::exchange(other.papi_set_, -1);
    papi_buf_ = std::exchange(other.papi_buf_, {});
  }
  return *this;
}

counter_set::~counter_set() {
  close();
}

void split_accumulator::add_to(std::vector<uint64_t>& sums, const uint64_t* now) noexcept {
  for (size_t i = 0; i < sums.size(); ++i) {
    // A value that went backwards (PAPI scaling a multiplexed event) adds 0, not 2^64 - x.
    sums[i] += now[i] > last_[i] ? now[i] - last_[i] : 0;
    last_[i] = now[i];
  }
}

void split_accumulator::start(const uint64_t* now) noexcept {
  std::fill(in_.begin(), in_.end(), 0);
  std::fill(out_.begin(), out_.end(), 0);
  std::copy(now, now + last_.size(), last_.begin());
  depth_ = 0;
}

void split_accumulator::enter_mpi(const uint64_t* now) noexcept {
  if (depth_++ == 0) {
    add_to(out_, now);
  }
}

void split_accumulator::leave_mpi(const uint64_t* now) noexcept {
  if (depth_ > 0 && --depth_ == 0) {
    add_to(in_, now);
  }
}

void split_accumulator::finish(const uint64_t* now) noexcept {
  add_to(depth_ > 0 ? in_ : out_, now);
}

} // namespace strata::counters
