// Stages 2-3: this rank's gradient partition, in the model dtype, which accumulates the averaged
// slices over the micro-batches of a step, and where its sources come from: the host's gradient
// buffers (zeroed as they are read, so the host starts the next micro-batch from zero) or the
// buffers lent to parameters registered without one (lent_grads.hpp). The reducer reads the
// sources through fill() / ready_buffer() and adds this rank's slice through deliver().
//
// fp32 models with contiguous_gradients send a lent bucket buffer as it is (ready_buffer). The
// optimizer reads fp32: half models get a transient fp32 copy of the partition from finish_reduce
// (or owned_shards) to zero_grad.
#pragma once

#include "device_memory.hpp"
#include "dtype_cast.hpp"
#include "lent_grads.hpp"
#include "param.hpp"
#include "partition_layout.hpp"
#include "partition_reducer.hpp"

#include <strata/plugin.hpp>

#include <vector>

namespace strata::zero {

class GradPartition final : public ReduceTarget {
 public:
  GradPartition() = default;
  // Allocates the (zeroed) partition, STRATA_MEM_GRADS. `layout` and `params` must outlive this.
  GradPartition(const sdk::Host& host, const Caster& caster, const PartitionLayout& layout,
                const std::vector<ParamRecord>& params, int32_t dtype, bool contiguous);

  // Lent gradient buffers (see LentGrads).
  void lend(const std::vector<uint32_t>& params) { lent_.lend(params); }
  void unlend(const std::vector<uint32_t>& params) { lent_.unlend(params); }
  void new_round() { lent_.new_round(); }
  // Where the host writes parameter p's gradient now: its own buffer, or the one lent to it.
  void* view(uint32_t p) const;

  // The fp32 partition the shards point into: the partition itself for fp32 models, else the
  // transient copy (created, zeroed, if there is none).
  float* fp32();
  // End of the step's reductions: refreshes the fp32 copy of a half model from the partition.
  void to_fp32();
  // Zeroes the partition and the host's gradients; frees the fp32 copy.
  void zero();

  const float* ready_buffer(size_t bucket) override;
  void fill(size_t bucket, uint64_t first, uint64_t count, float* out) override;
  void sent(size_t bucket) override;
  void deliver(size_t bucket, uint64_t offset, uint64_t count, const float* values) override;
  void completed(size_t bucket) override;

 private:
  sdk::Host host_;
  Caster caster_{host_};
  const PartitionLayout* layout_ = nullptr;
  const std::vector<ParamRecord>* params_ = nullptr;
  int32_t dtype_ = STRATA_F32;
  Buffer<unsigned char> partition_;  // model dtype, accumulates over micro-batches
  Buffer<float> fp32_copy_;          // half models: from finish_reduce to zero_grad
  LentGrads lent_;
  std::vector<uint8_t> direct_;  // per bucket: sent straight from its lent buffer
};

}  // namespace strata::zero
