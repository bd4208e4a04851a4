// The sharding plugin's view of the comm stratum (borrowed through the host-services table):
// checks once what the comm plugin can do, then issues its collectives through sdk::Comm, naming
// what each one was for when it fails.
#pragma once

#include "device_memory.hpp"

#include <strata/plugin.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::zero {

class CommLink {
 public:
  // Throws STRATA_ERR_UNSUPPORTED if there is no comm stratum or it lacks what `stage` needs:
  // f32 allreduce of host or CUDA memory always (the job's device is checked at the first
  // collective, once finalize made it known); reduce_scatter and allgather from stage 1; i64 allgather
  // (the gather/release sequence check) from stage 2.
  CommLink(const sdk::Host& host, int stage);

  int rank() const { return caps_.rank; }
  int size() const { return caps_.size; }
  bool can_move(int32_t dtype) const { return (caps_.dtype_mask & STRATA_DTYPE_BIT(dtype)) != 0; }

  // Data collectives take buffers at the job's location (Memory); control data (the i64 and f64
  // vectors below) lives on the host and is staged through device memory when the comm plugin
  // moves only device memory.

  // Starts an allreduce of `count` f32 elements (send may equal recv). Returns the request to
  // wait on, or nullptr if the comm plugin has no non-blocking collectives and already finished.
  strata_request start_allreduce(const float* send, float* recv, uint64_t count,
                                 strata_reduce_op op);
  // Starts a reduce_scatter of size()*count f32 elements; rank r receives block r (`count`).
  strata_request start_reduce_scatter(const float* send, float* recv, uint64_t count,
                                      strata_reduce_op op);
  // The same two in `dtype` (communication_data_type): send and recv hold elements of it.
  strata_request start_allreduce(const void* send, void* recv, uint64_t count, int32_t dtype,
                                 strata_reduce_op op);
  strata_request start_reduce_scatter(const void* send, void* recv, uint64_t count,
                                      int32_t dtype, strata_reduce_op op);
  // Throws STRATA_ERR_UNSUPPORTED unless the comm stratum reduces `dtype` (named as `key`).
  void require_reduce_dtype(int32_t dtype, const std::string& key) const;
  // Starts an allgather of `count` elements of `dtype` from every rank into recv (size()*count).
  strata_request start_allgather(const void* send, void* recv, uint64_t count, int32_t dtype);
  void wait(strata_request req);
  // Lets the transport progress an earlier request (MPI moves non-blocking collectives along
  // only inside MPI calls). Never waits.
  void poke(strata_request req);

  // Blocking allgather of `values` (the same length on every rank): rank r's at r*values.size().
  std::vector<int64_t> allgather_i64(const std::vector<int64_t>& values);

  // Blocking check that every rank passes the same `values`; throws STRATA_ERR_MISMATCH naming
  // the first differing entry (`names[i]`) and its range over the ranks.
  void expect_same_on_all_ranks(const std::vector<int64_t>& values,
                                const std::vector<std::string>& names);

 private:
  // The job's memory, checked once against what the comm plugin can move.
  const Memory& memory();
  // Runs a blocking collective `call(in, out)` over host arrays, through device copies when the
  // comm plugin cannot move host memory.
  template <class Call>
  void on_host_data(void* in, void* out, uint64_t in_count, uint64_t out_count, int32_t dtype,
                    Call&& call);

  sdk::Host host_;
  std::optional<Memory> memory_;
  sdk::Comm comm_;
  strata_comm_caps caps_{};  // collective_mask without the collectives whose function is NULL
};

}  // namespace strata::zero
