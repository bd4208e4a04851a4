#include "faults/tracked_comm.hpp"

#include <strata/plugin.hpp>

#include <algorithm>
#include <utility>

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

// The larger of a collective's buffers, in bytes: what the timeline shows of it.
uint64_t payload_bytes(const strata_coll_args* args) {
  uint64_t bytes = 0;
  if (args == nullptr || !STRATA_STRUCT_HAS(args, strata_coll_args, recv)) return 0;
  for (const strata_buffer* b : {args->send, args->recv}) {
    if (b != nullptr) bytes = std::max<uint64_t>(bytes, b->count * sdk::dtype_size(b->dtype));
  }
  return bytes;
}

}  // namespace

uint32_t offered_collectives(const strata_comm_ops& ops, uint32_t mask) {
  const std::pair<strata_collective, bool> present[] = {
      {STRATA_COLL_ALLREDUCE, ops.allreduce != nullptr},
      {STRATA_COLL_ALLGATHER, ops.allgather != nullptr},
      {STRATA_COLL_ALLGATHERV, ops.allgatherv != nullptr},
      {STRATA_COLL_REDUCE_SCATTER, ops.reduce_scatter != nullptr},
      {STRATA_COLL_BROADCAST, ops.broadcast != nullptr},
      {STRATA_COLL_BARRIER, ops.barrier != nullptr},
      {STRATA_COLL_ALLTOALLV, ops.alltoallv != nullptr}};
  for (const auto& [collective, has] : present) {
    if (!has) mask &= ~STRATA_COLL_BIT(collective);
  }
  return mask;
}

TrackedComm::TrackedComm(const strata_comm_ops& ops, void* self, ActivityBoard& board,
                         StepTime& step_time, const TimelineSlot& timeline)
    : real_(ops), real_self_(self), board_(board), step_time_(step_time), timeline_(timeline) {
  fill_table();
}

TrackedComm::TrackedComm(const TrackedComm& parent, void* child)
    : real_(parent.real_), real_self_(child), board_(parent.board_),
      step_time_(parent.step_time_), timeline_(parent.timeline_),
      parent_abandoned_(parent.parent_abandoned_ != nullptr ? parent.parent_abandoned_
                                                            : &parent.abandoned_),
      owns_instance_(true), on_board_(false) {
  fill_table();
}

void TrackedComm::fill_table() {
  const strata_comm_ops& ops = real_;
  // The loader checked that the required functions are set; the optional ones stay NULL here when
  // the plugin left them NULL, so whoever holds the proxy sees what the plugin offers.
  table_.header = STRATA_OPS_HEADER(strata_comm_ops, STRATA_PLUGIN_COMM);
  table_.create = &TrackedComm::create;
  table_.destroy = &TrackedComm::destroy;
  table_.query = &TrackedComm::query;
  table_.allreduce = &TrackedComm::allreduce;
  table_.allgather = &TrackedComm::allgather;
  table_.allgatherv = ops.allgatherv != nullptr ? &TrackedComm::allgatherv : nullptr;
  table_.reduce_scatter = ops.reduce_scatter != nullptr ? &TrackedComm::reduce_scatter : nullptr;
  table_.broadcast = &TrackedComm::broadcast;
  table_.barrier = &TrackedComm::barrier;
  table_.wait = ops.wait != nullptr ? &TrackedComm::wait : nullptr;
  table_.test = ops.test != nullptr ? &TrackedComm::test : nullptr;
  table_.alltoallv = ops.alltoallv != nullptr ? &TrackedComm::alltoallv : nullptr;
  table_.split = ops.split != nullptr ? &TrackedComm::split : nullptr;
}

void TrackedComm::destroy(void* self) {
  auto* t = static_cast<TrackedComm*>(self);
  if (t == nullptr || !t->owns_instance_) return;
  // Abandoned (this rank failed alone, or a forked child's copy): the plugin's teardown could
  // wait for the ending ranks, or free the parent process's transport; the instance is left.
  if (!t->is_abandoned()) t->real_.destroy(t->real_self_);
  delete t;
}

strata_status TrackedComm::refuse(strata_error* err) const {
  return sdk::set_error(err, STRATA_ERR_COMM,
                        "this rank failed and the other ranks are ending: the comm stratum is closed");
}

template <class Call>
strata_status TrackedComm::timed(const char* name, uint64_t seq, const strata_coll_args* args,
                                 Call&& call) {
  // Starting a collective counts too: on a busy machine the call that hands it to the comm's
  // thread can lose the core to that thread for the whole collective (bench/step_overhead saw
  // 0.2 ms starts at 2 ranks on 2 cores), time the host would otherwise wait for in wait().
  const bool counted = step_time_.part_begin(TimePart::CommWait);
  Timeline* timeline = timeline_.load(std::memory_order_acquire);
  // Opened before the call: a rank that never comes back from a collective shows it in its trace.
  const Timeline::Open open =
      timeline != nullptr ? timeline->open("comm", name, -1, payload_bytes(args), seq) : 0;
  const strata_status status = call();
  if (timeline != nullptr) timeline->close(open);
  if (counted) step_time_.part_end();
  return status;
}

template <class Call>
strata_status TrackedComm::collective(const char* name, const strata_coll_args* args,
                                      strata_request* req, strata_error* err, Call&& call) {
  if (is_abandoned()) return refuse(err);
  if (!on_board_) return timed(name, 0, args, call);
  const uint64_t seq = board_.start_collective(name);
  if (req != nullptr) {
    // The wait comes later, under the same number.
    const strata_status status = timed(name, seq, args, call);
    if (status == STRATA_OK && *req != nullptr && timeline_.load(std::memory_order_relaxed) != nullptr) {
      std::lock_guard lock(requests_mutex_);
      request_seq_[*req] = seq;
    }
    return status;
  }
  WaitGuard waiting(board_);
  return timed(name, seq, args, call);
}

strata_status TrackedComm::create(const strata_plugin_create_args*, void**, strata_error* err) {
  return sdk::set_error(err, STRATA_ERR_UNSUPPORTED,
                        "the comm stratum lent in a host table is an instance already; it cannot create");
}

strata_status TrackedComm::query(void* self, strata_comm_caps* caps, strata_error* err) {
  TrackedComm& t = of(self);
  const strata_status status = t.real_.query(t.real_self_, caps, err);
  if (status == STRATA_OK && caps != nullptr && STRATA_STRUCT_HAS(caps, strata_comm_caps, collective_mask)) {
    caps->collective_mask = offered_collectives(t.real_, caps->collective_mask);
  }
  if (status == STRATA_OK && caps != nullptr && STRATA_STRUCT_HAS(caps, strata_comm_caps, features) &&
      t.real_.split == nullptr) {
    caps->features &= ~STRATA_COMM_FEATURE_SPLIT;
  }
  return status;
}

strata_status TrackedComm::alltoallv(void* self, const strata_coll_args* args, strata_request* req,
                                     strata_error* err) {
  TrackedComm& t = of(self);
  return t.collective("alltoallv", args, req, err,
                      [&] { return t.real_.alltoallv(t.real_self_, args, req, err); });
}

// The child comes back wrapped in a proxy of its own, so that whoever holds this proxy's table
// uses the child through it too (the contract: "used through this same table").
strata_status TrackedComm::split(void* self, const strata_comm_split_args* args, void** child,
                                 strata_error* err) {
  TrackedComm& t = of(self);
  if (child == nullptr) {
    return sdk::set_error(err, STRATA_ERR_INVALID_ARGUMENT, "split: child is NULL");
  }
  *child = nullptr;
  if (t.is_abandoned()) return t.refuse(err);
  void* real_child = nullptr;
  const auto call = [&] { return t.real_.split(t.real_self_, args, &real_child, err); };
  strata_status status;
  if (t.on_board_) {
    const uint64_t seq = t.board_.start_collective("split");
    WaitGuard waiting(t.board_);
    status = t.timed("split", seq, nullptr, call);
  } else {
    status = t.timed("split", 0, nullptr, call);
  }
  if (status != STRATA_OK || real_child == nullptr) return status;
  try {
    *child = new TrackedComm(t, real_child);
  } catch (const std::bad_alloc&) {
    t.real_.destroy(real_child);
    return sdk::set_error(err, STRATA_ERR_OUT_OF_MEMORY, "split: no memory for the sub-group");
  }
  return STRATA_OK;
}

strata_status TrackedComm::allreduce(void* self, const strata_coll_args* args, strata_request* req,
                               strata_error* err) {
  TrackedComm& t = of(self);
  return t.collective("allreduce", args, req, err,
                      [&] { return t.real_.allreduce(t.real_self_, args, req, err); });
}

strata_status TrackedComm::allgather(void* self, const strata_coll_args* args, strata_request* req,
                               strata_error* err) {
  TrackedComm& t = of(self);
  return t.collective("allgather", args, req, err,
                      [&] { return t.real_.allgather(t.real_self_, args, req, err); });
}

strata_status TrackedComm::allgatherv(void* self, const strata_coll_args* args, strata_request* req,
                               strata_error* err) {
  TrackedComm& t = of(self);
  return t.collective("allgatherv", args, req, err,
                      [&] { return t.real_.allgatherv(t.real_self_, args, req, err); });
}

strata_status TrackedComm::reduce_scatter(void* self, const strata_coll_args* args, strata_request* req,
                               strata_error* err) {
  TrackedComm& t = of(self);
  return t.collective("reduce_scatter", args, req, err,
                      [&] { return t.real_.reduce_scatter(t.real_self_, args, req, err); });
}

strata_status TrackedComm::broadcast(void* self, const strata_coll_args* args, strata_request* req,
                               strata_error* err) {
  TrackedComm& t = of(self);
  return t.collective("broadcast", args, req, err,
                      [&] { return t.real_.broadcast(t.real_self_, args, req, err); });
}

strata_status TrackedComm::barrier(void* self, const strata_coll_args* args, strata_request* req,
                               strata_error* err) {
  TrackedComm& t = of(self);
  return t.collective("barrier", args, req, err,
                      [&] { return t.real_.barrier(t.real_self_, args, req, err); });
}

strata_status TrackedComm::wait(void* self, strata_request req, strata_error* err) {
  TrackedComm& t = of(self);
  if (t.is_abandoned()) return t.refuse(err);  // the request is left to the process's end
  uint64_t seq = 0;
  if (t.timeline_.load(std::memory_order_relaxed) != nullptr) {
    std::lock_guard lock(t.requests_mutex_);
    if (auto it = t.request_seq_.find(req); it != t.request_seq_.end()) {
      seq = it->second;
      t.request_seq_.erase(it);
    }
  }
  if (!t.on_board_) {
    return t.timed("wait", seq, nullptr, [&] { return t.real_.wait(t.real_self_, req, err); });
  }
  WaitGuard waiting(t.board_);
  return t.timed("wait", seq, nullptr, [&] { return t.real_.wait(t.real_self_, req, err); });
}

strata_status TrackedComm::test(void* self, strata_request req, int32_t* done,
                                strata_error* err) {
  TrackedComm& t = of(self);
  if (t.is_abandoned()) return t.refuse(err);
  const strata_status status = t.real_.test(t.real_self_, req, done, err);
  if (status == STRATA_OK && done != nullptr && *done != 0 &&
      t.timeline_.load(std::memory_order_relaxed) != nullptr) {
    std::lock_guard lock(t.requests_mutex_);  // completed: the handle is freed and may be reused
    t.request_seq_.erase(req);
  }
  return status;
}

}  // namespace strata::rt
