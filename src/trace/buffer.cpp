#include "trace/buffer.hpp"

#include <algorithm>
#include <new>

namespace strata::trace {

event_buffer::event_buffer(uint64_t limit_bytes, limit_policy policy)
    : max_chunks_(std::max<uint64_t>(policy == limit_policy::ring ? 2 : 1,
                                     limit_bytes / (chunk_records * sizeof(record)))),
      policy_(policy) {
  chunks_.reserve(std::min<size_t>(max_chunks_, 1u << 16));
}

event_buffer::~event_buffer() {
  for (record* c : chunks_)
    delete[] c;
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
  if (chunks_.size() < max_chunks_) {
    auto* c = new (std::nothrow) record[chunk_records];
    if (c != nullptr) {
      chunks_.push_back(c);
      current_ = c;
      next_ = c;
      end_ = c + chunk_records;
      return next_++;
    }
    max_chunks_ = chunks_.size(); // out of memory: the limit is what we have
  }
  if (policy_ == limit_policy::stop || chunks_.size() < 2) {
    stopped_ = true;
    current_ = chunks_.empty() ? nullptr : chunks_.back();
    ++dropped_;
    return nullptr;
  }
  // Ring: the oldest chunk becomes the newest.
  dropped_ += chunk_records;
  current_ = chunks_[head_];
  head_ = (head_ + 1) % chunks_.size();
  next_ = current_;
  end_ = current_ + chunk_records;
  return next_++;
}

} // namespace strata::trace
