// Stage 0 with an f16/bf16 model, laid out like DeepSpeed's fp16 optimizer: every rank keeps an
// fp32 master copy of every parameter (STRATA_MEM_MASTER) that the optimizer steps, and the
// step's gradients are averaged in fp32 (sum in fp32, as DeepSpeed's bf16 does; f16 alike).
//
// Both fp32 copies use one flat layout: buckets back to back, each laid out as the plan says.
// A bucket is then a contiguous fp32 range: load() casts its parameters' half gradients straight
// into that range of the gradient copy and the allreduce runs there in place, so no fusion buffer
// and no copy back are needed. The gradient copy (STRATA_MEM_GRADS) is transient: created by the
// step's first bucket (or owned_shards), dropped by zero_grad, so that between steps the model
// state is DeepSpeed's 16 bytes per parameter with Adam (2 + 2 + 4 + 8). The masters reach the
// parameters as the shards' model copies, which the step writes (never this plugin).
#pragma once

#include "device_memory.hpp"
#include "bucket_plan.hpp"
#include "dtype_cast.hpp"
#include "param.hpp"
#include "stage0_buffers.hpp"

#include <strata/plugin.hpp>

#include <cstdint>
#include <vector>

namespace strata::zero {

class Fp32Copies final : public BucketBuffers {
 public:
  // Allocates the masters and fills them from the parameters' `data` (the values the runtime
  // broadcast from rank 0). `params` and `plan` must outlive this object.
  Fp32Copies(const sdk::Host& host, const Caster& caster, const std::vector<ParamRecord>& params,
             const BucketPlan& plan, int32_t dtype);

  float* master_of(uint32_t param) const { return at(master_, param); }
  // Creates the gradient copy if there is none (its contents are then zero).
  float* grad_of(uint32_t param) { return at(grads(), param); }

  float* load(size_t k) override;  // the timeline's "bucket_pack": the casts to fp32
  void unload(size_t /*k*/) override {}  // reduced where the shards read

  // Frees the gradient copy; the next step's first bucket creates it again.
  void drop_grads() { grads_ = Buffer<float>(); }

  uint64_t elements() const { return elements_; }

 private:
  const Buffer<float>& grads();
  float* at(const Buffer<float>& copy, uint32_t param) const {
    return copy.data() == nullptr ? nullptr : copy.data() + offset_[param];
  }

  sdk::Host host_;
  Caster caster_;
  sdk::Tracer tracer_;
  const std::vector<ParamRecord>& params_;
  const BucketPlan& plan_;
  int32_t dtype_;
  std::vector<uint64_t> bucket_offset_;  // per bucket: its first element in the flat layout
  std::vector<uint64_t> offset_;         // per parameter (0 for empty ones)
  uint64_t elements_ = 0;
  Buffer<float> master_;
  Buffer<float> grads_;
};

}  // namespace strata::zero
