// Stages 2-3: this rank's gradient partition, which accumulates the averaged slices over the
// micro-batches of a step, and where its sources come from: the host's gradient buffers (zeroed as
// they are read, so the host starts the next micro-batch from zero) or the buffers lent to
// parameters registered without one (lent_grads.hpp). The reducer reads the sources through
// fill() / ready_buffer() and adds this rank's slice through deliver().
//
// The partition accumulates in fp32 whatever the model dtype, so a half model's gradients take
// exactly stage 0's path: each half gradient is cast to fp32 (fill), the fp32 slices are averaged
// by the comm plugin as stage 0's allreduce averages them (both in communication_data_type, fp32
// unless the user asks for f16/bf16: partition_reducer.hpp), and the average is
// kept as it arrives (a step's first delivery into a bucket copies: no `0 + x`, which would turn
// -0 into +0). No rounding to the model dtype happens anywhere, so with one micro-batch per step
// the optimizer reads stage 0's gradients bit for bit wherever the comm plugin sums in the same
// order (always at 2 ranks). For a half model this fp32 partition is transient (4P bytes from
// the step's first delivery, or owned_shards, to zero_grad); fp32 models keep it persistently.
// Either way it is a PageBuffer: finalize leaves it untouched, zero_grad gives its pages back to
// the kernel, and a slice takes memory again only when backward delivers it, so a step's first
// backward starts with the partition holding nothing (later micro-batches of the step start with
// what earlier ones delivered). What that saves at the host's peak depends on the host giving
// back what backward frees (strata.torch trims glibc's heap: plugins/zero/README.md).
// (Until issue 30, item 4, half models kept a model-dtype partition, d·P, into which every average
// was rounded, and a transient fp32 copy of it: that rounding was what set stages 2-3 apart.)
//
// fp32 models with contiguous_gradients send a lent bucket buffer as it is (ready_buffer).
#pragma once

#include "device_memory.hpp"
#include "dtype_cast.hpp"
#include "lent_grads.hpp"
#include "page_buffer.hpp"
#include "param.hpp"
#include "partition_layout.hpp"
#include "partition_reducer.hpp"

#include <strata/plugin.hpp>

#include <vector>

namespace strata::zero {

class GradPartition final : public ReduceTarget {
 public:
  GradPartition() = default;
  // Allocates the (zero, not yet resident) partition, STRATA_MEM_GRADS, unless it is transient:
  // a half model's, or any model's when `transient_only` (stage 3 with its partitions on a drive).
  // `layout` and `params` must outlive this.
  GradPartition(const sdk::Host& host, const Caster& caster, const PartitionLayout& layout,
                const std::vector<ParamRecord>& params, int32_t dtype, bool contiguous,
                bool transient_only = false);

  // Lent gradient buffers (see LentGrads).
  void lend(const std::vector<uint32_t>& params) { lent_.lend(params); }
  void unlend(const std::vector<uint32_t>& params) { lent_.unlend(params); }
  void new_round() { lent_.new_round(); }
  const std::shared_ptr<SpareBuffers>& spares() const { return lent_.spares(); }
  // Where the host writes parameter p's gradient now: its own buffer, or the one lent to it.
  void* view(uint32_t p) const;

  // The fp32 partition the shards point into (created, zeroed, if there is none).
  float* fp32();
  // End of the step's reductions: the partition exists even if no bucket delivered (a model of
  // empty parameters), as the shards point into it. (The name is from when half models kept a
  // model-dtype partition and this cast it to fp32.)
  void to_fp32() { fp32(); }
  // Zeroes the partition (its pages leave the process; a half model's is freed) and the host's
  // gradients.
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
  // Whether the partition exists only during a step (a half model's, or as asked).
  bool transient() const { return dtype_ != STRATA_F32 || transient_; }

  int32_t dtype_ = STRATA_F32;
  bool transient_ = false;
  PageBuffer partition_;  // fp32, accumulates over micro-batches
  LentGrads lent_;
  std::vector<uint8_t> direct_;    // per bucket: sent straight from its lent buffer
  std::vector<uint8_t> holds_;     // per bucket: its slice has received a value since zero()
};

}  // namespace strata::zero
