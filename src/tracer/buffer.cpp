#include "tracer/buffer.hpp"

#include <algorithm>
#include <sys/mman.h>

namespace strata::trace {

namespace {

constexpr size_t chunk_bytes = event_buffer::chunk_records * sizeof(record);

// A chunk straight from the kernel with its pages already present: one system call per 8192
// records (malloc would make the same mmap call for this size) instead of a page fault every 57
// records inside the traced calls.
record* new_chunk() {
  void* p = ::mmap(nullptr, chunk_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<record*>(p);
}

} // namespace

event_buffer::event_buffer(uint64_t limit_bytes, limit_policy policy, uint64_t prefault_bytes)
    : max_chunks_(std::max<uint64_t>(policy == limit_policy::ring ? 2 : 1,
                                     limit_bytes / (chunk_records * sizeof(record)))),
      policy_(policy) {
  chunks_.reserve(std::min<size_t>(max_chunks_, 1u << 16));
  const uint64_t wanted =
      std::min<uint64_t>(max_chunks_, (prefault_bytes + chunk_records * sizeof(record) - 1) /
                                          (chunk_records * sizeof(record)));
  for (uint64_t i = 0; i < wanted; ++i) {
    record* c = new_chunk();
    if (c == nullptr)
      break;
    chunks_.push_back(c);
  }
}

event_buffer::~event_buffer() {
  for (record* c : chunks_)
    ::munmap(c, chunk_bytes);
}

uint64_t event_buffer::recorded() const {
  uint64_t n = 0;
  for_each([&n](const record&) { ++n; });
  return n;
}

record* event_buffer::next_chunk() {
  if (stopped_) {
    ++dropped_;
    return nullptr;
  }
  if (used_ < chunks_.size() || chunks_.size() < max_chunks_) {
    record* c = used_ < chunks_.size() ? chunks_[used_] : new_chunk();
    if (c != nullptr) {
      if (used_ == chunks_.size())
        chunks_.push_back(c);
      ++used_;
      current_ = c;
      next_ = c;
      end_ = c + chunk_records;
      return next_++;
    }
    max_chunks_ = chunks_.size(); // out of memory: the limit is what we have
  }
  if (policy_ == limit_policy::stop || used_ < 2) {
    stopped_ = true;
    current_ = used_ == 0 ? nullptr : chunks_[used_ - 1];
    ++dropped_;
    return nullptr;
  }
  // Ring: the oldest chunk becomes the newest.
  dropped_ += chunk_records;
  current_ = chunks_[head_];
  head_ = (head_ + 1) % used_;
  next_ = current_;
  end_ = current_ + chunk_records;
  return next_++;
}

} // namespace strata::trace
