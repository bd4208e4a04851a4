// Averages gradients over ranks bucket by bucket, overlapping the reduction with backward.
//
// Every rank must issue the same collectives in the same order, yet ranks may finish gradients in
// different orders (or never report some). So buckets start strictly in bucket order: bucket k
// starts only once all its parameters are ready AND buckets 0..k-1 have started. finish() starts
// whatever is left, in the same order, so all ranks end up with the identical collective sequence.
//
// communication_data_type f16/bf16: a bucket's fp32 values are rounded into a buffer of that dtype
// (STRATA_MEM_COMM_BUFFERS, from its start to its completion), allreduced there (half the bytes)
// and the average widened back into the fp32 bucket. With fp32 (the default) the bucket is
// allreduced as it is: the arithmetic stages 1-3 do too (partition_reducer.hpp).
#pragma once

#include "bucket_plan.hpp"
#include "comm_link.hpp"
#include "device_memory.hpp"
#include "dtype_cast.hpp"
#include "param.hpp"
#include "stage0_buffers.hpp"

#include <strata/plugin.hpp>

#include <cstdint>
#include <vector>

namespace strata::zero {

class Stage0Reducer {
 public:
  // `params`, `plan` and `buffers` must outlive the reducer (the stage owns them all); `buffers`
  // says where each bucket is reduced. Each reduction is a "bucket_reduce" span on `tracer`.
  Stage0Reducer(CommLink& comm, const std::vector<ParamRecord>& params, const BucketPlan& plan,
                BucketBuffers& buffers, const sdk::Tracer& tracer, const sdk::Host& host,
                int32_t comm_dtype = STRATA_F32);
  // Completes reductions still in flight: the comm plugin may still write into the buffers.
  ~Stage0Reducer();
  Stage0Reducer(const Stage0Reducer&) = delete;
  Stage0Reducer& operator=(const Stage0Reducer&) = delete;

  // Param `index` has its final gradient for this step. Throws if it was already reported.
  void mark_ready(uint32_t index);
  // Starts every bucket not yet started, waits for all, unloads the averages and begins a new
  // step. Collective.
  void finish();
  // True between the first bucket start of a step and finish().
  bool in_flight() const { return next_to_start_ > 0; }
  // Forgets this step's ready marks. Only when !in_flight(): started buckets must be finished.
  void reset_step();

 private:
  struct BucketState {
    size_t ready = 0;  // parameters of this bucket reported ready this step
    strata_request request = nullptr;
    int64_t begin_ns = 0;  // when its allreduce started (the timeline's "bucket_reduce")
    float* data = nullptr;  // the fp32 values being reduced
    Buffer<unsigned char> narrow;  // comm_dtype_ other than fp32: what travels
  };

  void start_complete_buckets();
  void start(size_t bucket);
  void wait_and_unpack(size_t bucket);

  CommLink& comm_;
  const std::vector<ParamRecord>& params_;
  const BucketPlan& plan_;
  BucketBuffers& buffers_;
  sdk::Tracer tracer_;
  sdk::Host host_;
  Caster caster_;
  int32_t comm_dtype_;
  std::vector<BucketState> state_;
  std::vector<uint8_t> ready_;  // per parameter, this step
  size_t next_to_start_ = 0;    // buckets [0, next_to_start_) have started this step
};

}  // namespace strata::zero
