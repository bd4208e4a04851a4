#include "tracked_comm.hpp"

#include <algorithm>
#include <cstdio>

namespace strata::rt {
namespace {

// Marks the rank as blocked for the lifetime of the guard.
class WaitGuard {
 public:
  explicit WaitGuard(ActivityBoard& board) : board_(board) { board_.begin_wait(); }
  ~WaitGuard() { board_.end_wait(); }
  WaitGuard(const WaitGuard&) = delete;
  WaitGuard& operator=(const WaitGuard&) = delete;

 private:
  ActivityBoard& board_;
};

}  // namespace

TrackedComm::TrackedComm(const strata_comm_ops& ops, void* self, ActivityBoard& board)
    : real_(ops), real_self_(self), board_(board) {
  // Every comm function exists since ABI 1.0; a later table's extra fields are not proxied, so
  // the proxy claims no more than it forwards.
  table_.struct_size = std::min(ops.struct_size, sizeof(strata_comm_ops));
  table_.create = &TrackedComm::create;
  table_.destroy = &TrackedComm::destroy;
  table_.query = &TrackedComm::query;
  table_.allreduce = &TrackedComm::allreduce;
  table_.allgather = &TrackedComm::allgather;
  table_.allgatherv = &TrackedComm::allgatherv;
  table_.reduce_scatter = &TrackedComm::reduce_scatter;
  table_.broadcast = &TrackedComm::broadcast;
  table_.barrier = &TrackedComm::barrier;
  table_.wait = &TrackedComm::wait;
  table_.test = &TrackedComm::test;
}

strata_status TrackedComm::refuse(strata_error* err) const {
  if (err != nullptr && err->struct_size >= sizeof(strata_error)) {
    err->code = STRATA_ERR_COMM;
    std::snprintf(err->message, sizeof err->message,
                  "this rank failed and the other ranks are ending: the comm stratum is closed");
  }
  return STRATA_ERR_COMM;
}

template <class Call>
strata_status TrackedComm::collective(const char* name, strata_request* req, strata_error* err,
                                      Call&& call) {
  if (abandoned_) return refuse(err);
  board_.start_collective(name);
  if (req != nullptr) return call();
  WaitGuard waiting(board_);
  return call();
}

strata_status TrackedComm::create(const char*, const strata_host_api*, void**, strata_error* err) {
  if (err != nullptr && err->struct_size >= sizeof(strata_error)) {
    err->code = STRATA_ERR_UNSUPPORTED;
    std::snprintf(err->message, sizeof err->message,
                  "the comm stratum lent in a host table is an instance already; it cannot create");
  }
  return STRATA_ERR_UNSUPPORTED;
}

strata_status TrackedComm::query(void* self, strata_comm_caps* caps, strata_error* err) {
  TrackedComm& t = of(self);
  return t.real_.query(t.real_self_, caps, err);
}

strata_status TrackedComm::allreduce(void* self, const strata_buffer* send,
                                     const strata_buffer* recv, int32_t op, strata_request* req,
                                     strata_error* err) {
  TrackedComm& t = of(self);
  return t.collective("allreduce", req, err,
                      [&] { return t.real_.allreduce(t.real_self_, send, recv, op, req, err); });
}

strata_status TrackedComm::allgather(void* self, const strata_buffer* send,
                                     const strata_buffer* recv, strata_request* req,
                                     strata_error* err) {
  TrackedComm& t = of(self);
  return t.collective("allgather", req, err,
                      [&] { return t.real_.allgather(t.real_self_, send, recv, req, err); });
}

strata_status TrackedComm::allgatherv(void* self, const strata_buffer* send,
                                      const strata_buffer* recv, const uint64_t* recv_counts,
                                      const uint64_t* displs, strata_request* req,
                                      strata_error* err) {
  TrackedComm& t = of(self);
  return t.collective("allgatherv", req, err, [&] {
    return t.real_.allgatherv(t.real_self_, send, recv, recv_counts, displs, req, err);
  });
}

strata_status TrackedComm::reduce_scatter(void* self, const strata_buffer* send,
                                          const strata_buffer* recv, int32_t op,
                                          strata_request* req, strata_error* err) {
  TrackedComm& t = of(self);
  return t.collective("reduce_scatter", req, err, [&] {
    return t.real_.reduce_scatter(t.real_self_, send, recv, op, req, err);
  });
}

strata_status TrackedComm::broadcast(void* self, const strata_buffer* buf, int32_t root,
                                     strata_request* req, strata_error* err) {
  TrackedComm& t = of(self);
  return t.collective("broadcast", req, err,
                      [&] { return t.real_.broadcast(t.real_self_, buf, root, req, err); });
}

strata_status TrackedComm::barrier(void* self, strata_request* req, strata_error* err) {
  TrackedComm& t = of(self);
  return t.collective("barrier", req, err, [&] { return t.real_.barrier(t.real_self_, req, err); });
}

strata_status TrackedComm::wait(void* self, strata_request req, strata_error* err) {
  TrackedComm& t = of(self);
  if (t.abandoned_) return t.refuse(err);  // the request is left to the process's end
  WaitGuard waiting(t.board_);
  return t.real_.wait(t.real_self_, req, err);
}

strata_status TrackedComm::test(void* self, strata_request req, int32_t* done,
                                strata_error* err) {
  TrackedComm& t = of(self);
  if (t.abandoned_) return t.refuse(err);
  return t.real_.test(t.real_self_, req, done, err);
}

}  // namespace strata::rt
