// Stages 1-3: this rank's fp32 master partition (STRATA_MEM_MASTER), laid out as the partition
// layout says, and the shards the optimizer steps: one per owned range of a parameter.
// Stages 1-2 with an fp32 model keep no partition: the masters would only repeat this rank's
// ranges of the parameters' `data`, so each shard's master points there (every owned range lies
// within one parameter) and the step updates the parameters in place, as at stage 0.
//
// Model-dtype copies (the ABI's one rule): for f16/bf16 models every shard names where the step
// writes the rounded master (`strata_shard.model`); the offload plugin or the runtime writes it,
// never this plugin. The copy goes where the model needs the value anyway, so publish only moves
// data: a whole parameter's own range of its `data` (publish then allgathers from there), or for
// stage 3's partitioned buckets the rank's slice of the parameter partition.
#pragma once

#include "device_memory.hpp"
#include "dtype_cast.hpp"
#include "param.hpp"
#include "partition_layout.hpp"

#include <strata/plugin.hpp>

#include <functional>
#include <vector>

namespace strata::zero {

class MasterPartition {
 public:
  MasterPartition() = default;
  // Allocates the masters and fills them from the parameters' `data` (the values the runtime
  // broadcast from rank 0 before finalize); builds the shards. With `in_params` (fp32 models
  // only) the shards' masters are the parameters' `data` instead and nothing is allocated.
  // `layout` must outlive this object.
  MasterPartition(const sdk::Host& host, const Caster& caster, const PartitionLayout& layout,
                  const std::vector<ParamRecord>& params, int32_t dtype, bool in_params = false);

  // f16/bf16 models: points every shard's model copy at the parameter's own `data`, or, for the
  // buckets where `partition_slice(b)` is given (stage 3's partitioned ones), into that slice of
  // the parameter partition. Returns how many shards ask for a copy (0 for fp32 models).
  size_t request_model_copies(const std::vector<ParamRecord>& params,
                              const std::function<void*(size_t bucket)>& partition_slice = {});

  // Points every shard's grad into `grads`, an fp32 partition laid out like the masters.
  const std::vector<strata_shard>& shards_with_grads(float* grads);
  // The partition (layout offsets), or nullptr when the masters are the parameters' `data`.
  const float* data() const { return master_.data(); }
  float* data() { return master_.data(); }

 private:
  void add_shard(const OwnedRange& r, float* master);

  const PartitionLayout* layout_ = nullptr;
  int32_t dtype_ = STRATA_F32;
  Buffer<float> master_;
  std::vector<OwnedRange> ranges_;
  std::vector<strata_shard> shards_;
};

}  // namespace strata::zero
