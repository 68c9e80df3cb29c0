// Test module `probe`: an event module that counts what it sees and logs enter/exit order, so
// integration tests can check layer order, exact counts, services and MPI_Pcontrol.
// Arguments: out=DIR (required), name=NAME, log=GLOBS (functions logged in order, default none),
// count=GLOBS (default "*"), publish=SERVICE, lookup=SERVICE, fields=GROUPS (the event fields it
// declares it reads, strata_module_fields_v1: '+'-separated comm, peer, tag, bytes, requests,
// status; without it, every field; bytes are summed only when it declares them),
// fields_of=FUNCTION/GROUPS (those of one function instead, strata_module_function_fields_v1),
// timed=FUNCTIONS ('+'-separated: slots lent to the core for those, strata_module_timed_counts_v1,
// written to the counts file as "slot" lines; the module then has no enter callback, its exit
// callback counting the calls), timed_null=FUNCTIONS (the same, but answered with a null slot:
// a module that says yes and lends nothing, whose calls the core keeps as events), after_start=1
// (with MPI_Start or MPI_Startall in timed: the core calls it back after each start it summed,
// written as "after_start" lines: callbacks and the requests their events named).
#include <mpi.h>
#include <strata/module.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

struct probe_state {
  const strata_host* host = nullptr;
  int self = 0;
  std::string name = "probe";
  std::string out;
  std::string lookup;
  std::vector<bool> logged;
  std::vector<std::atomic<long>> calls;
  std::vector<std::atomic<long>> bytes_sent;
  std::vector<std::atomic<long>> bytes_received;
  std::vector<std::atomic<long>> time_ns;
  std::vector<int> pcontrol_levels;
  std::vector<bool> timed;              // by function: its slot lent to the core
  std::vector<bool> timed_null;         // by function: said yes, lent a null slot
  std::vector<strata_timed_slot> slots; // by function
  bool after_start = false;             // after_start=1: lend the start callback too
  std::vector<long> start_callbacks;    // by function: after_start calls
  std::vector<long> started_requests;   // by function: the requests their events named
  uint64_t latest_exit_ns = 0;
  int rank = -1;
  long service_value = 0;
  uint32_t fields = STRATA_FIELD_ALL;
  int own_fields_function = -1; // fields_of: this function reads own_fields instead
  uint32_t own_fields = 0;
  uint32_t fields_of(int function) const {
    return function == own_fields_function ? own_fields : fields;
  }
  bool reads_bytes(int function) const {
    const uint32_t f = fields_of(function);
    return (f & STRATA_FIELD_BYTES) != 0 &&
           (f & (STRATA_FIELD_STATUS | STRATA_FIELD_RECEIVED)) != 0;
  }
};

// "comm+bytes" -> STRATA_FIELD_COMM | STRATA_FIELD_BYTES; false for a name it does not know.
// "a+b" -> {"a", "b"}: the words of a list written with `separator` ("" is one empty word).
std::vector<std::string> words(const std::string& text, char separator) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (size_t end = text.find(separator); end != std::string::npos;
       pos = end + 1, end = text.find(separator, pos))
    out.push_back(text.substr(pos, end - pos));
  out.push_back(text.substr(pos));
  return out;
}

bool parse_fields(const std::string& text, uint32_t& out) {
  static const struct {
    const char* name;
    uint32_t bit;
  } groups[] = {{"comm", STRATA_FIELD_COMM},         {"peer", STRATA_FIELD_PEER},
                {"tag", STRATA_FIELD_TAG},           {"bytes", STRATA_FIELD_BYTES},
                {"requests", STRATA_FIELD_REQUESTS}, {"status", STRATA_FIELD_STATUS},
                {"received", STRATA_FIELD_RECEIVED}};
  out = 0;
  for (const std::string& word : words(text, '+')) {
    bool known = word.empty();
    for (const auto& g : groups)
      if (word == g.name) {
        out |= g.bit;
        known = true;
      }
    if (!known)
      return false;
  }
  return true;
}

// "MPI_Recv/bytes+received": that function's fields (fields_of); false when malformed.
bool parse_fields_of(const strata_host& host, const std::string& text, probe_state& s) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos)
    return false;
  const int function = host.function_id(text.substr(0, slash).c_str());
  if (function < 0 || !parse_fields(text.substr(slash + 1), s.own_fields))
    return false;
  s.own_fields_function = function;
  return true;
}

void append_line(const probe_state& s, const std::string& line) {
  const std::string path = s.out + "/log." + std::to_string(s.rank);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0)
    return;
  const std::string text = line + "\n";
  [[maybe_unused]] ssize_t n = ::write(fd, text.data(), text.size());
  ::close(fd);
}

void on_enter(strata_event* ev, void* raw) {
  auto* s = static_cast<probe_state*>(raw);
  const auto f = static_cast<size_t>(ev->function);
  s->calls[f].fetch_add(1, std::memory_order_relaxed);
  if (s->reads_bytes(ev->function))
    s->bytes_sent[f].fetch_add(ev->bytes_sent, std::memory_order_relaxed);
  if (s->logged[f] && s->rank >= 0)
    append_line(*s, s->name + " enter " + s->host->function_name(ev->function));
}

bool exit_only = false; // timed=...: no enter callback, so that the core may count
extern strata_module probe_module;

void on_exit(strata_event* ev, void* raw) {
  auto* s = static_cast<probe_state*>(raw);
  const auto f = static_cast<size_t>(ev->function);
  if (exit_only) {
    s->calls[f].fetch_add(1, std::memory_order_relaxed);
    if (s->reads_bytes(ev->function))
      s->bytes_sent[f].fetch_add(ev->bytes_sent, std::memory_order_relaxed);
  }
  s->time_ns[f].fetch_add(static_cast<long>(ev->t_exit_ns - ev->t_enter_ns),
                          std::memory_order_relaxed);
  if (s->reads_bytes(ev->function) && ev->bytes_received > 0)
    s->bytes_received[f].fetch_add(ev->bytes_received, std::memory_order_relaxed);
  if (s->logged[f] && s->rank >= 0)
    append_line(*s, s->name + " exit " + s->host->function_name(ev->function));
}

// The core's call after a start it summed: never from two threads at once (module.h).
void on_after_start(strata_event* ev, void* raw) {
  auto* s = static_cast<probe_state*>(raw);
  const auto f = static_cast<size_t>(ev->function);
  ++s->start_callbacks[f];
  if (ev->requests != nullptr)
    s->started_requests[f] += ev->request_count;
  else if (ev->request != 0)
    ++s->started_requests[f];
}

int on_load(const strata_host* host, int self, const strata_module_arg* args, int nargs,
            void** state, char* error, size_t error_size) {
  auto* s = new probe_state();
  s->host = host;
  s->self = self;
  const auto n = static_cast<size_t>(host->function_count());
  s->logged.assign(n, false);
  s->calls = std::vector<std::atomic<long>>(n);
  s->bytes_sent = std::vector<std::atomic<long>>(n);
  s->bytes_received = std::vector<std::atomic<long>>(n);
  s->time_ns = std::vector<std::atomic<long>>(n);
  s->timed.assign(n, false);
  s->timed_null.assign(n, false);
  s->start_callbacks.assign(n, 0);
  s->started_requests.assign(n, 0);
  strata_timed_slot empty{};
  empty.min_ns = UINT64_MAX;
  s->slots.assign(n, empty);
  std::string count = "*";
  std::string log;
  std::string publish;
  for (int i = 0; i < nargs; ++i) {
    const std::string key = args[i].key;
    if (key == "out")
      s->out = args[i].value;
    else if (key == "name")
      s->name = args[i].value;
    else if (key == "log")
      log = args[i].value; // '+'-separated: commas separate modules in --tools

    else if (key == "count")
      count = args[i].value;
    else if (key == "timed" || key == "timed_null") {
      std::vector<bool>& lent = key == "timed" ? s->timed : s->timed_null;
      for (const std::string& name : words(args[i].value, '+'))
        if (const int f = host->function_id(name.c_str()); f >= 0)
          lent[static_cast<size_t>(f)] = true;
      exit_only = true;
    } else if (key == "after_start")
      s->after_start = std::string(args[i].value) == "1";
    else if (key == "publish")
      publish = args[i].value;
    else if (key == "lookup")
      s->lookup = args[i].value;
    else if ((key == "fields" && parse_fields(args[i].value, s->fields)) ||
             (key == "fields_of" && parse_fields_of(*host, args[i].value, *s)))
      continue;
    else {
      std::snprintf(error, error_size, "unknown argument '%s'", args[i].key);
      delete s;
      return 1;
    }
  }
  if (s->out.empty()) {
    std::snprintf(error, error_size, "out=DIR is required");
    delete s;
    return 1;
  }
  if (exit_only)
    probe_module.enter = nullptr; // read when the core builds the chains, after every load
  for (char& c : log)
    if (c == '+')
      c = ',';
  host->subscribe(self, count.c_str());
  if (!log.empty()) {
    // Logged functions are subscribed too, and remembered for the order log.
    host->subscribe(self, log.c_str());
    for (const std::string& name : words(log, ','))
      if (const int f = host->function_id(name.c_str()); f >= 0)
        s->logged[static_cast<size_t>(f)] = true;
  }
  if (!publish.empty()) {
    s->service_value = 4242;
    host->publish(self, publish.c_str(), "long", &s->service_value);
  }
  *state = s;
  return 0;
}

void on_ready(void* raw) {
  auto* s = static_cast<probe_state*>(raw);
  MPI_Comm_rank(MPI_COMM_WORLD, &s->rank);
}

void on_pcontrol(int level, void* raw) {
  static_cast<probe_state*>(raw)->pcontrol_levels.push_back(level);
}

void on_finalize(void* raw) {
  auto* s = static_cast<probe_state*>(raw);
  // An MPI call of the module's own: it reaches no other layer (the layers below it when the
  // module is built as probe_seen), never this module again.
  long local = s->calls[static_cast<size_t>(s->host->function_id("MPI_Send"))].load();
  long total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  const std::string path = s->out + "/" + s->name + "." + std::to_string(s->rank) + ".counts";
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr)
    return;
  for (size_t i = 0; i < s->calls.size(); ++i)
    if (s->calls[i].load() > 0)
      std::fprintf(f, "%s %ld %ld %ld %ld\n", s->host->function_name(static_cast<int>(i)),
                   s->calls[i].load(), s->bytes_sent[i].load(), s->bytes_received[i].load(),
                   s->time_ns[i].load());
  for (int level : s->pcontrol_levels)
    std::fprintf(f, "pcontrol %d\n", level);
  std::fprintf(f, "total_sends %ld\n", total);
  for (size_t i = 0; i < s->slots.size(); ++i) {
    const strata_timed_slot& slot = s->slots[i];
    if (!s->timed[i])
      continue;
    std::fprintf(f, "slot %s calls=%llu count=%llu sent=%llu received=%llu time_ok=%d",
                 s->host->function_name(static_cast<int>(i)),
                 static_cast<unsigned long long>(slot.calls),
                 static_cast<unsigned long long>(slot.count_sum),
                 static_cast<unsigned long long>(slot.bytes_sent),
                 static_cast<unsigned long long>(slot.bytes_received),
                 slot.calls == 0 || (slot.min_ns <= slot.max_ns && slot.max_ns <= slot.time_ns));
    for (int b = 0; b < STRATA_TIMED_SIZE_BINS; ++b)
      if (slot.size_hist[b] != 0)
        std::fprintf(f, " size%d=%llu", b, static_cast<unsigned long long>(slot.size_hist[b]));
    for (int b = 0; b < STRATA_TIMED_COMM_BINS; ++b)
      if (slot.comm_hist[b] != 0)
        std::fprintf(f, " comm%d=%llu", b, static_cast<unsigned long long>(slot.comm_hist[b]));
    std::fprintf(f, "\n");
    if (s->start_callbacks[i] != 0)
      std::fprintf(f, "after_start %s callbacks=%ld requests=%ld\n",
                   s->host->function_name(static_cast<int>(i)), s->start_callbacks[i],
                   s->started_requests[i]);
  }
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const auto now_ns = static_cast<uint64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
  std::fprintf(f, "latest_exit_ok %d\n",
               s->latest_exit_ns != 0 && s->latest_exit_ns <= now_ns + 1000000);
  // How long before this the latest exit lies: the core moves it on once a millisecond.
  std::fprintf(f, "latest_exit_lag_ms %lld\n",
               static_cast<long long>(now_ns - s->latest_exit_ns) / 1000000);
  // The core's event clock must stay CLOCK_MONOTONIC, whichever counter it reads. Of a few
  // tries the one with the smallest difference: a preemption between the two reads is not skew.
  long long skew = 0;
  for (int i = 0; i < 10; ++i) {
    timespec mono{};
    const auto event_ns = static_cast<int64_t>(s->host->now_ns());
    clock_gettime(CLOCK_MONOTONIC, &mono);
    const auto diff = static_cast<long long>(
        event_ns - (static_cast<int64_t>(mono.tv_sec) * 1000000000 + mono.tv_nsec));
    if (i == 0 || std::llabs(diff) < std::llabs(skew))
      skew = diff;
  }
  std::fprintf(f, "clock_skew_ns %lld\n", skew);
  if (!s->lookup.empty()) {
    auto* v = static_cast<long*>(s->host->lookup(s->lookup.c_str(), "long"));
    auto* wrong = s->host->lookup(s->lookup.c_str(), "double");
    std::fprintf(f, "lookup %s %ld %s\n", s->lookup.c_str(), v != nullptr ? *v : -1L,
                 wrong == nullptr ? "signature-checked" : "signature-ignored");
  }
  std::fclose(f);
}

strata_module probe_module = {STRATA_MODULE_ABI_VERSION,
                              "probe",
                              STRATA_MPI_FLAVOR,
                              "test module: counts events, logs order",
                              on_load,
                              on_ready,
                              on_enter,
                              on_exit,
                              on_pcontrol,
                              on_finalize,
                              nullptr};
} // namespace

extern "C" STRATA_MODULE_EXPORT const strata_module* strata_module_v1(void) {
  return &probe_module;
}

extern "C" STRATA_MODULE_EXPORT int strata_module_timed_counts_v1(void* state, int function,
                                                                  strata_timed_counts* out) {
  auto* s = static_cast<probe_state*>(state);
  if (function < 0 || static_cast<size_t>(function) >= s->timed.size())
    return 0;
  if (s->timed_null[static_cast<size_t>(function)]) {
    out->slot = nullptr;
    out->latest_exit_ns = &s->latest_exit_ns;
    return 1;
  }
  if (!s->timed[static_cast<size_t>(function)])
    return 0;
  out->slot = &s->slots[static_cast<size_t>(function)];
  out->latest_exit_ns = &s->latest_exit_ns;
  out->histograms = STRATA_TIMED_SIZE_HISTOGRAM | STRATA_TIMED_COMM_HISTOGRAM;
  if (s->after_start)
    out->after_start = on_after_start; // read for MPI_Start and MPI_Startall only
  return 1;
}

extern "C" STRATA_MODULE_EXPORT uint32_t strata_module_fields_v1(void* state) {
  return static_cast<probe_state*>(state)->fields;
}

extern "C" STRATA_MODULE_EXPORT uint32_t strata_module_function_fields_v1(void* state,
                                                                          int function) {
  return static_cast<probe_state*>(state)->fields_of(function);
}

#ifdef PROBE_OWN_CALLS_SEEN
// probe_seen: the same module asking for its own calls to be seen by the layers below it.
extern "C" STRATA_MODULE_EXPORT const int strata_module_own_calls_seen_v1 = 1;
#endif
