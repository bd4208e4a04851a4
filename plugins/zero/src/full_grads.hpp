// Stages 0-1 keep whole gradients across micro-batches. Where the host registered grad = NULL
// (ABI 1.1) the plugin allocates that whole buffer itself and uses it exactly like a host one.
#pragma once

#include "device_memory.hpp"
#include "bucket_plan.hpp"
#include "param.hpp"

#include <strata/plugin.hpp>

#include <vector>

namespace strata::zero {

class FullGrads {
 public:
  FullGrads() = default;
  // Allocates a zeroed buffer (STRATA_MEM_GRADS) for every non-empty parameter of `params`
  // without one, and points its `grad` there.
  //
  // With a stage-0 `plan` of an fp32 model: a fused bucket none of whose parameters has a host
  // buffer gets one allocation laid out as the bucket is, each parameter's gradient being its
  // slice, so the bucket is reduced where it lies: no copy into a fusion buffer and back (0.03 ms
  // of the example's 1.8 ms step at 2 ranks). bucket_arena(k) is then that allocation.
  FullGrads(const sdk::Host& host, std::vector<ParamRecord>& params,
            const BucketPlan* plan = nullptr);
  // Bucket k's gradients, laid out as the bucket (see above), or nullptr.
  float* bucket_arena(size_t k) const { return k < arenas_.size() ? arenas_[k] : nullptr; }
  // Zeroes every parameter's gradient, host-owned or ours, where `memory` says they are.
  static void zero(const std::vector<ParamRecord>& params, const Memory& memory);

 private:
  std::vector<Buffer<unsigned char>> owned_;
  std::vector<float*> arenas_;  // per bucket of the plan; nullptr where none
};

}  // namespace strata::zero
