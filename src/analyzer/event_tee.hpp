// An event handler that hands every event to two others in turn: a writer that needs what the
// trace records of each operation (its messages' peers, tags, sizes) and the analysis, which
// tells the writer what it derives (matched messages, wait states) through its observer.
#pragma once

#include "analyzer/trace_reader.hpp"

#include <type_traits>

namespace strata::analyze {

class event_tee final : public event_handler {
public:
  event_tee(event_handler& first, event_handler& second) : first_(first), second_(second) {}

  void enter(uint32_t rank, uint64_t time, uint32_t region, uint32_t site) override {
    to_both(&event_handler::enter, rank, time, region, site);
  }
  void leave(uint32_t rank, uint64_t time, uint32_t region) override {
    to_both(&event_handler::leave, rank, time, region);
  }
  void send(uint32_t rank, uint64_t time, uint32_t receiver, uint32_t comm, uint32_t tag,
            uint64_t bytes) override {
    to_both(&event_handler::send, rank, time, receiver, comm, tag, bytes);
  }
  void isend(uint32_t rank, uint64_t time, uint32_t receiver, uint32_t comm, uint32_t tag,
             uint64_t bytes, uint64_t request) override {
    to_both(&event_handler::isend, rank, time, receiver, comm, tag, bytes, request);
  }
  void partitioned_isend(uint32_t rank, uint64_t time, uint32_t receiver, uint32_t comm,
                         uint32_t tag, uint64_t bytes, uint64_t request) override {
    to_both(&event_handler::partitioned_isend, rank, time, receiver, comm, tag, bytes, request);
  }
  void isend_complete(uint32_t rank, uint64_t time, uint64_t request) override {
    to_both(&event_handler::isend_complete, rank, time, request);
  }
  void irecv_request(uint32_t rank, uint64_t time, uint64_t request) override {
    to_both(&event_handler::irecv_request, rank, time, request);
  }
  void recv(uint32_t rank, uint64_t time, uint32_t sender, uint32_t comm, uint32_t tag,
            uint64_t bytes) override {
    to_both(&event_handler::recv, rank, time, sender, comm, tag, bytes);
  }
  void irecv(uint32_t rank, uint64_t time, uint32_t sender, uint32_t comm, uint32_t tag,
             uint64_t bytes, uint64_t request) override {
    to_both(&event_handler::irecv, rank, time, sender, comm, tag, bytes, request);
  }
  void request_cancelled(uint32_t rank, uint64_t time, uint64_t request) override {
    to_both(&event_handler::request_cancelled, rank, time, request);
  }
  void collective_end(uint32_t rank, uint64_t time, uint32_t op, uint32_t comm, uint32_t root,
                      uint64_t sent, uint64_t received) override {
    to_both(&event_handler::collective_end, rank, time, op, comm, root, sent, received);
  }
  void one_sided(uint32_t rank, uint64_t time, uint8_t kind, uint32_t target,
                 uint64_t bytes) override {
    to_both(&event_handler::one_sided, rank, time, kind, target, bytes);
  }
  void program_event(uint32_t rank, uint64_t time) override {
    to_both(&event_handler::program_event, rank, time);
  }

private:
  // One event handed to both handlers: `handler` is the member of event_handler it goes to.
  template <typename... Args>
  void to_both(void (event_handler::*handler)(Args...), std::type_identity_t<Args>... args) {
    (first_.*handler)(args...);
    (second_.*handler)(args...);
  }

  event_handler& first_;
  event_handler& second_;
};

} // namespace strata::analyze
