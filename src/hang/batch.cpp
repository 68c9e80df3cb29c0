// strata.hang-batch/1: magic "SHB1"; varints (LEB128; signed ones zigzag) throughout: the tool
// ranks it went through, the root's bytes in and time, the text table (count, then each length and
// bytes), the base time (the first state's heartbeat), the states (each rank, world size, pid, host
// text, heartbeat and thread times relative to the base, threads not described, its threads with
// every field of thread_state, in the order thread_fields walks them), then the unread ranks (rank,
// reason text).
#include "hang/batch.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>

namespace strata::hang {
namespace {

constexpr std::string_view batch_magic = "SHB1";
constexpr size_t max_text = 4096;
constexpr uint64_t max_threads = 4096; // the state file's own bound on slots

class batch_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class writer {
public:
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void signed_varint(int64_t v) {
    varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  void byte(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void text(const std::string& s) {
    auto [it, added] = index_.try_emplace(s, static_cast<uint32_t>(texts_.size()));
    if (added)
      texts_.push_back(s);
    varint(it->second);
  }
  // The table first, then the body written so far.
  std::string finish(const state_batch& batch) {
    writer head;
    head.out_ = std::string(batch_magic);
    head.varint(batch.tool_ranks);
    head.varint(batch.root_bytes);
    head.varint(batch.merge_ns);
    head.varint(texts_.size());
    for (const std::string& t : texts_) {
      head.varint(t.size());
      head.out_ += t;
    }
    return head.out_ + out_;
  }

private:
  std::string out_;
  std::vector<std::string> texts_;
  std::unordered_map<std::string, uint32_t> index_;
};

class reader {
public:
  explicit reader(std::string_view in) : in_(in) {}
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = byte();
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0)
        return v;
    }
    throw batch_error("a number longer than 64 bits");
  }
  int64_t signed_varint() {
    const uint64_t z = varint();
    return static_cast<int64_t>(z >> 1) ^ -static_cast<int64_t>(z & 1);
  }
  int32_t i32(const char* what) {
    const int64_t v = signed_varint();
    if (v < INT32_MIN || v > INT32_MAX)
      throw batch_error(std::string(what) + " out of range");
    return static_cast<int32_t>(v);
  }
  uint32_t u32(const char* what) {
    const uint64_t v = varint();
    if (v > UINT32_MAX)
      throw batch_error(std::string(what) + " out of range");
    return static_cast<uint32_t>(v);
  }
  uint8_t byte() {
    if (pos_ >= in_.size())
      throw batch_error("truncated");
    return static_cast<uint8_t>(in_[pos_++]);
  }
  // A count of items of at least `min_bytes` each: no more than the rest could hold.
  uint64_t count(size_t min_bytes, const char* what) {
    const uint64_t n = varint();
    if (n > (in_.size() - pos_) / min_bytes)
      throw batch_error(std::string(what) + " count " + std::to_string(n) + " exceeds the batch");
    return n;
  }
  std::string raw(size_t n) {
    if (n > in_.size() - pos_)
      throw batch_error("truncated");
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  const std::string& text() {
    const uint64_t i = varint();
    if (i >= texts.size())
      throw batch_error("text " + std::to_string(i) + " not in the table");
    return texts[i];
  }
  [[nodiscard]] bool done() const { return pos_ == in_.size(); }
  std::vector<std::string> texts;

private:
  std::string_view in_;
  size_t pos_ = 0;
};

// The fields of a state, in their order in the batch: one list that both directions walk, so
// a field is added in one place. `io` is an encoder (writes each field) or a decoder (reads and
// checks it), the state const or not accordingly.
template <class Io, class Comm> void comm_fields(Io& io, Comm& c) {
  io.number(c.id, "communicator id");
  io.number(c.size, "communicator size");
  io.number(c.first, "communicator first");
  io.number(c.stride, "communicator stride");
}

template <class Io, class Op> void pending_fields(Io& io, Op& op) {
  io.code(op.kind, op_kind::send, op_kind::matched_recv, "pending operation kind");
  io.flag(op.waited);
  io.number(op.collective, "collective", collective_count);
  io.number(op.peer, "pending peer");
  io.number(op.tag, "pending tag");
  io.number(op.bytes, "pending bytes");
  comm_fields(io, op.comm);
}

template <class Io, class Thread> void thread_fields(Io& io, Thread& t) {
  io.code(t.phase, thread_phase::unused, thread_phase::finalized, "thread phase");
  io.code(t.lang, language::unknown, language::python, "language");
  io.flag(t.torn);
  io.number(t.os_thread, "thread id");
  io.text(t.routine);
  io.text(t.file);
  io.number(t.line, "line");
  io.text(t.function);
  io.text(t.native_file);
  io.number(t.native_line, "native line");
  io.text(t.native_function);
  comm_fields(io, t.comm);
  io.number(t.peer, "peer");
  io.number(t.peer2, "second peer");
  io.number(t.tag, "tag");
  io.number(t.tag2, "second tag");
  io.number(t.bytes, "bytes");
  io.time(t.since_ns);
  io.number(t.calls_completed, "calls completed");
  io.number(t.pending_total, "pending total");
  io.number(t.waited_total, "waited total");
  // At least 6 bytes an operation (two bytes and four numbers).
  io.list(t.pending, 6, max_listed_pending, "pending operation",
          [&](auto& op) { pending_fields(io, op); });
}

template <class Io, class Rank> void rank_fields(Io& io, Rank& s) {
  io.number(s.world_rank, "rank");
  io.number(s.world_size, "world size");
  io.check([&] {
    if (s.world_size < 1 || s.world_size > max_world_size || s.world_rank < 0 ||
        s.world_rank >= s.world_size)
      throw batch_error("rank " + std::to_string(s.world_rank) + " of " +
                        std::to_string(s.world_size));
  });
  io.number(s.pid, "pid");
  io.text(s.host);
  io.time(s.observed_ns);
  io.number(s.threads_not_described, "threads not described");
  // At least 25 bytes a thread (its bytes, texts, and numbers).
  io.list(s.threads, 25, max_threads, "thread", [&](auto& t) { thread_fields(io, t); });
}

// Numbers as varints (signed ones zigzag), codes and flags as bytes, times relative to the base.
class encoder {
public:
  encoder(writer& w, uint64_t base) : w_(w), base_(base) {}
  template <class T> void number(const T& v, const char* /*what*/, uint64_t /*max*/ = 0) {
    if constexpr (std::is_signed_v<T>)
      w_.signed_varint(v);
    else
      w_.varint(v);
  }
  template <class E> void code(const E& v, E /*min*/, E /*max*/, const char* /*what*/) {
    w_.byte(static_cast<uint8_t>(v));
  }
  void flag(bool v) { w_.byte(v ? 1 : 0); }
  void text(const std::string& s) { w_.text(s); }
  void time(uint64_t ns) { w_.signed_varint(static_cast<int64_t>(ns - base_)); }
  template <class Item, class Fields>
  void list(const std::vector<Item>& items, size_t /*min_bytes*/, uint64_t /*max*/,
            const char* /*what*/, Fields fields) {
    w_.varint(items.size());
    for (const Item& item : items)
      fields(item);
  }
  template <class Check> void check(Check /*check*/) {}

private:
  writer& w_;
  uint64_t base_;
};

// The same walk, each field read and checked against what its type and the state allow.
class decoder {
public:
  decoder(reader& r, uint64_t base) : r_(r), base_(base) {}
  template <class T> void number(T& v, const char* what, uint64_t max = 0) {
    if constexpr (std::is_signed_v<T>) {
      const int64_t read = r_.signed_varint();
      if constexpr (sizeof(T) < sizeof(int64_t))
        if (read < std::numeric_limits<T>::min() || read > std::numeric_limits<T>::max())
          throw batch_error(std::string(what) + " out of range");
      v = static_cast<T>(read);
    } else {
      const uint64_t read = r_.varint();
      if (max != 0 && read > max)
        throw batch_error(std::string(what) + " " + std::to_string(read));
      if constexpr (sizeof(T) < sizeof(uint64_t))
        if (read > std::numeric_limits<T>::max())
          throw batch_error(std::string(what) + " out of range");
      v = static_cast<T>(read);
    }
  }
  template <class E> void code(E& v, E min, E max, const char* what) {
    const uint8_t read = r_.byte();
    if (read < static_cast<uint8_t>(min) || read > static_cast<uint8_t>(max))
      throw batch_error(std::string(what) + " " + std::to_string(read));
    v = static_cast<E>(read);
  }
  void flag(bool& v) { v = r_.byte() != 0; }
  void text(std::string& s) { s = r_.text(); }
  void time(uint64_t& ns) { ns = base_ + static_cast<uint64_t>(r_.signed_varint()); }
  template <class Item, class Fields>
  void list(std::vector<Item>& items, size_t min_bytes, uint64_t max, const char* what,
            Fields fields) {
    const uint64_t n = r_.count(min_bytes, what);
    if (n > max)
      throw batch_error(std::string("more ") + what + "s than a state holds");
    items.resize(n);
    for (Item& item : items)
      fields(item);
  }
  template <class Check> void check(Check check) { check(); }

private:
  reader& r_;
  uint64_t base_;
};

} // namespace

std::string encode_batch(const state_batch& batch) {
  writer w;
  const uint64_t base = batch.states.empty() ? 0 : batch.states.front().observed_ns;
  w.varint(base);
  w.varint(batch.states.size());
  encoder fields(w, base);
  for (const rank_state& s : batch.states)
    rank_fields(fields, s);
  w.varint(batch.unread.size());
  for (const unread_rank& u : batch.unread) {
    w.signed_varint(u.rank);
    w.text(u.why);
  }
  return w.finish(batch);
}

batch_read_result decode_batch(std::string_view bytes) {
  batch_read_result out;
  if (!bytes.starts_with(batch_magic)) {
    out.error = "not a batch of hang states (no SHB1 magic)";
    return out;
  }
  reader r(bytes.substr(batch_magic.size()));
  try {
    out.batch.tool_ranks = r.u32("tool ranks");
    out.batch.root_bytes = r.varint();
    out.batch.merge_ns = r.varint();
    const uint64_t texts = r.count(1, "text");
    for (uint64_t i = 0; i < texts; ++i) {
      const uint64_t n = r.varint();
      if (n > max_text)
        throw batch_error("a text of " + std::to_string(n) + " bytes");
      r.texts.push_back(r.raw(n));
    }
    const uint64_t base = r.varint();
    const uint64_t states = r.count(7, "state");
    decoder fields(r, base);
    for (uint64_t i = 0; i < states; ++i) {
      rank_state s;
      rank_fields(fields, s);
      s.source = "rank " + std::to_string(s.world_rank) + " (through the tree)";
      out.batch.states.push_back(std::move(s));
    }
    const uint64_t unread = r.count(2, "unread rank");
    for (uint64_t i = 0; i < unread; ++i) {
      unread_rank u;
      u.rank = r.i32("unread rank");
      u.why = r.text();
      out.batch.unread.push_back(std::move(u));
    }
    if (!r.done())
      throw batch_error("bytes after the end");
  } catch (const batch_error& e) {
    out.batch = {};
    out.error = std::string("batch of hang states: ") + e.what();
  }
  return out;
}

void merge_batch(state_batch& into, state_batch&& from) {
  into.states.insert(into.states.end(), std::make_move_iterator(from.states.begin()),
                     std::make_move_iterator(from.states.end()));
  into.unread.insert(into.unread.end(), std::make_move_iterator(from.unread.begin()),
                     std::make_move_iterator(from.unread.end()));
  into.tool_ranks += from.tool_ranks;
}

} // namespace strata::hang
