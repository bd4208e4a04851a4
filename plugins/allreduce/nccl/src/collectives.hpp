// The collectives: each checks its arguments (device_buffers.hpp and the SDK's checks), then
// enqueues its NCCL work on the plugin's stream between the host stream's events (StreamOrder) and
// records the request's event. Nothing here waits: the caller waits on the request.
#pragma once

#include "nccl_comm.hpp"
#include "request.hpp"
#include "stream_order.hpp"

#include <strata/plugin_api.h>

namespace strata::allreduce_nccl {

// One float of device memory: barrier's allreduce operand.
class DeviceScratch {
 public:
  explicit DeviceScratch(int device);  // throws sdk::Error (STRATA_ERR_OUT_OF_MEMORY)
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  float* get() const { return data_; }

 private:
  float* data_ = nullptr;
};

class Collectives {
 public:
  Collectives(NcclComm& comm, const StreamOrder& order, const DeviceScratch& scratch)
      : comm_(comm), order_(order), scratch_(scratch) {}

  void allreduce(const strata_coll_args& a, Request& r);
  void allgather(const strata_coll_args& a, Request& r);
  void allgatherv(const strata_coll_args& a, Request& r);
  void reduce_scatter(const strata_coll_args& a, Request& r);
  void broadcast(const strata_coll_args& a, Request& r);
  void barrier(Request& r);
  void alltoallv(const strata_coll_args& a, Request& r);  // ABI 1.10

 private:
  // Orders, enqueues (enqueue(comm, stream) issues the NCCL calls and settles them) and records.
  template <class Enqueue>
  void launch(const char* call, Request& r, Enqueue&& enqueue);

  NcclComm& comm_;
  const StreamOrder& order_;
  const DeviceScratch& scratch_;
};

}  // namespace strata::allreduce_nccl
