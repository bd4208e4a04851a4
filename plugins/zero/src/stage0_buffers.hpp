// Where a stage-0 bucket is averaged. The reducer runs one in-place fp32 allreduce (AVG) per
// bucket over the buffer load() fills, and calls unload() once it completed; what the buffer is
// depends on the model dtype (fp32 here, f16/bf16 in fp32_copies.hpp).
#pragma once

#include "device_memory.hpp"
#include "bucket_plan.hpp"
#include "full_grads.hpp"
#include "param.hpp"

#include <strata/plugin.hpp>

#include <cstddef>
#include <vector>

namespace strata::zero {

class BucketBuffers {
 public:
  virtual ~BucketBuffers() = default;
  // Gathers bucket `k`'s gradients into the fp32 buffer (plan.buckets[k].count elements) that
  // is reduced in place, and returns it. It stays valid until unload(k).
  virtual float* load(size_t k) = 0;
  // The average is in the buffer load(k) returned: put it where the shards read it.
  virtual void unload(size_t k) = 0;
};

// fp32 models: a bucket of one parameter is reduced where it lies, in the host's gradient buffer
// (which the shards point at), and so is a bucket whose gradients are ours, laid out as the bucket
// (FullGrads::bucket_arena); the others are copied into a fusion buffer of their own
// (STRATA_MEM_COMM_BUFFERS) and back: the timeline's "bucket_pack" and "bucket_unpack" spans
// (none for buckets reduced where they lie, which copy nothing).
class Fp32Buckets final : public BucketBuffers {
 public:
  // `params`, `plan` and `grads` must outlive this object (the stage owns them all).
  Fp32Buckets(const sdk::Host& host, const std::vector<ParamRecord>& params,
              const BucketPlan& plan, const FullGrads& grads);
  float* load(size_t k) override;
  void unload(size_t k) override;
  // For the log: buckets reduced where they lie, and the fusion buffers' elements.
  size_t reduced_where_they_lie() const;
  uint64_t fused_elements() const;

 private:
  float* grad_of(uint32_t index) const { return static_cast<float*>(params_[index].grad); }
  // Where bucket k is reduced without copies, or nullptr when it is fused.
  float* where_it_lies(size_t k) const;

  const std::vector<ParamRecord>& params_;
  const BucketPlan& plan_;
  const FullGrads& grads_;
  sdk::Tracer tracer_;
  Memory memory_;                           // where the gradients and fusion buffers are
  std::vector<Buffer<float>> fusion_;  // per bucket; empty where none is needed
};

}  // namespace strata::zero
