// A small binary codec for the overlay's messages: little-endian fixed-width fields and
// length-prefixed strings, with every read bounds-checked (a malformed packet is an error,
// never a crash). The same encoding is used in the file transport's round files.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace strata::overlay {

// Thrown by wire_reader on truncated or malformed input.
class wire_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class wire_writer {
public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { raw(&v, sizeof(v)); }
  void u64(uint64_t v) { raw(&v, sizeof(v)); }
  void f64(double v) { raw(&v, sizeof(v)); }
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    out_.append(s.data(), s.size());
  }
  std::string& buffer() { return out_; }
  std::string take() { return std::move(out_); }

private:
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

class wire_reader {
public:
  explicit wire_reader(std::string_view in) : in_(in) {}
  uint8_t u8() {
    need(1);
    return static_cast<uint8_t>(in_[pos_++]);
  }
  uint32_t u32() { return fixed<uint32_t>(); }
  uint64_t u64() { return fixed<uint64_t>(); }
  double f64() { return fixed<double>(); }
  std::string str() {
    const uint32_t n = u32();
    need(n);
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  // A count of items each at least `min_item_bytes` long: refuses counts the input cannot hold,
  // so a corrupt count never makes the reader allocate gigabytes.
  uint32_t count(size_t min_item_bytes) {
    const uint32_t n = u32();
    if (min_item_bytes > 0 && n > remaining() / min_item_bytes)
      throw wire_error("count " + std::to_string(n) + " exceeds the packet");
    return n;
  }
  size_t remaining() const { return in_.size() - pos_; }
  bool done() const { return pos_ == in_.size(); }

private:
  template <typename T> T fixed() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  void need(size_t n) const {
    if (n > remaining())
      throw wire_error("truncated packet");
  }
  std::string_view in_;
  size_t pos_ = 0;
};

} // namespace strata::overlay
