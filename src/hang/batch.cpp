// strata.hang-batch/1: magic "SHB1"; varints (LEB128; signed ones zigzag) throughout: the tool
// ranks it went through, the root's bytes in and time, the text table (count, then each length and
// bytes), the base time (the first state's heartbeat), the states (each rank, world size, pid, host
// text, heartbeat and thread times relative to the base, threads not described, its threads with
// every field of rank_state), then the unread ranks (rank, reason text).
#include "hang/batch.hpp"

#include <algorithm>
#include <stdexcept>
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

void put_comm(writer& w, const communicator& c) {
  w.varint(c.id);
  w.varint(c.size);
  w.signed_varint(c.first);
  w.signed_varint(c.stride);
}

communicator get_comm(reader& r) {
  communicator c;
  c.id = r.varint();
  c.size = r.u32("communicator size");
  c.first = r.i32("communicator first");
  c.stride = r.i32("communicator stride");
  return c;
}

void put_thread(writer& w, const thread_state& t, uint64_t base) {
  w.byte(static_cast<uint8_t>(t.phase));
  w.byte(static_cast<uint8_t>(t.lang));
  w.byte(t.torn ? 1 : 0);
  w.varint(t.os_thread);
  w.text(t.routine);
  w.text(t.file);
  w.varint(t.line);
  w.text(t.function);
  w.text(t.native_file);
  w.varint(t.native_line);
  w.text(t.native_function);
  put_comm(w, t.comm);
  w.signed_varint(t.peer);
  w.signed_varint(t.peer2);
  w.signed_varint(t.tag);
  w.signed_varint(t.tag2);
  w.varint(t.bytes);
  w.signed_varint(static_cast<int64_t>(t.since_ns - base));
  w.varint(t.calls_completed);
  w.varint(t.pending_total);
  w.varint(t.waited_total);
  w.varint(t.pending.size());
  for (const pending_op& op : t.pending) {
    w.byte(static_cast<uint8_t>(op.kind));
    w.byte(op.waited ? 1 : 0);
    w.varint(op.collective);
    w.signed_varint(op.peer);
    w.signed_varint(op.tag);
    w.varint(op.bytes);
    put_comm(w, op.comm);
  }
}

thread_state get_thread(reader& r, uint64_t base) {
  thread_state t;
  const uint8_t phase = r.byte();
  if (phase > static_cast<uint8_t>(thread_phase::finalized))
    throw batch_error("thread phase " + std::to_string(phase));
  t.phase = static_cast<thread_phase>(phase);
  const uint8_t lang = r.byte();
  if (lang > static_cast<uint8_t>(language::python))
    throw batch_error("language " + std::to_string(lang));
  t.lang = static_cast<language>(lang);
  t.torn = r.byte() != 0;
  t.os_thread = r.varint();
  t.routine = r.text();
  t.file = r.text();
  t.line = r.u32("line");
  t.function = r.text();
  t.native_file = r.text();
  t.native_line = r.u32("native line");
  t.native_function = r.text();
  t.comm = get_comm(r);
  t.peer = r.i32("peer");
  t.peer2 = r.i32("second peer");
  t.tag = r.i32("tag");
  t.tag2 = r.i32("second tag");
  t.bytes = r.varint();
  t.since_ns = base + static_cast<uint64_t>(r.signed_varint());
  t.calls_completed = r.varint();
  t.pending_total = r.u32("pending total");
  t.waited_total = r.u32("waited total");
  const uint64_t listed = r.count(6, "pending operation");
  if (listed > max_listed_pending)
    throw batch_error("more pending operations than a state lists");
  for (uint64_t i = 0; i < listed; ++i) {
    pending_op op;
    const uint8_t kind = r.byte();
    if (kind < static_cast<uint8_t>(op_kind::send) ||
        kind > static_cast<uint8_t>(op_kind::matched_recv))
      throw batch_error("pending operation kind " + std::to_string(kind));
    op.kind = static_cast<op_kind>(kind);
    op.waited = r.byte() != 0;
    const uint64_t collective = r.varint();
    if (collective > collective_count)
      throw batch_error("collective " + std::to_string(collective));
    op.collective = static_cast<uint16_t>(collective);
    op.peer = r.i32("pending peer");
    op.tag = r.i32("pending tag");
    op.bytes = r.varint();
    op.comm = get_comm(r);
    t.pending.push_back(op);
  }
  return t;
}

} // namespace

std::string encode_batch(const state_batch& batch) {
  writer w;
  const uint64_t base = batch.states.empty() ? 0 : batch.states.front().observed_ns;
  w.varint(base);
  w.varint(batch.states.size());
  for (const rank_state& s : batch.states) {
    w.signed_varint(s.world_rank);
    w.signed_varint(s.world_size);
    w.signed_varint(s.pid);
    w.text(s.host);
    w.signed_varint(static_cast<int64_t>(s.observed_ns - base));
    w.varint(s.threads_not_described);
    w.varint(s.threads.size());
    for (const thread_state& t : s.threads)
      put_thread(w, t, base);
  }
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
    for (uint64_t i = 0; i < states; ++i) {
      rank_state s;
      s.world_rank = r.i32("rank");
      s.world_size = r.i32("world size");
      if (s.world_size < 1 || s.world_size > max_world_size || s.world_rank < 0 ||
          s.world_rank >= s.world_size)
        throw batch_error("rank " + std::to_string(s.world_rank) + " of " +
                          std::to_string(s.world_size));
      s.pid = r.signed_varint();
      s.host = r.text();
      s.observed_ns = base + static_cast<uint64_t>(r.signed_varint());
      s.threads_not_described = r.u32("threads not described");
      const uint64_t threads = r.count(25, "thread");
      if (threads > max_threads)
        throw batch_error("more threads than a state holds");
      for (uint64_t t = 0; t < threads; ++t)
        s.threads.push_back(get_thread(r, base));
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
