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
#include "param_store.hpp"
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
  // only) the shards' masters are the parameters' `data` instead and nothing is allocated; with
  // `storage` (stage 3 under offload_param cpu: the store's memory) the masters live there.
  // `layout` must outlive this object.
  MasterPartition(const sdk::Host& host, const Caster& caster, const PartitionLayout& layout,
                  const std::vector<ParamRecord>& params, int32_t dtype, bool in_params = false,
                  float* storage = nullptr);
  // Stage 3 under offload_param nvme: the masters are filled bucket by bucket straight into
  // `store` at byte `offset` (one slice in memory at a time) and start paged out.
  MasterPartition(const sdk::Host& host, const Caster& caster, const PartitionLayout& layout,
                  const std::vector<ParamRecord>& params, int32_t dtype, const ParamStore& store,
                  uint64_t offset);

  // Stage 3 under offload_param nvme: the masters are paged, resident from page_in (read from
  // `store` at byte `offset`) to page_out (written back there, then freed); with the store's
  // mapping (ABI 1.9) they are used in place there instead, and page_out hands the pages back to
  // the kernel. The shards' masters point into them only while they are resident.
  bool resident() const { return master_.data() != nullptr || storage_ != nullptr; }
  void page_in(const ParamStore& store, uint64_t offset);
  void page_out(const ParamStore& store, uint64_t offset);

  // f16/bf16 models: points every shard's model copy at the parameter's own `data`, or, for the
  // buckets where `partition_slice(b)` is given (stage 3's partitioned ones), into that slice of
  // the parameter partition (a slice of nullptr: not in memory now, no copy until asked again).
  // Returns how many shards ask for a copy (0 for fp32 models).
  size_t request_model_copies(const std::vector<ParamRecord>& params,
                              const std::function<void*(size_t bucket)>& partition_slice = {});

  // This rank's fp32 slice of bucket b becomes `values` (slice elements): in memory, or in
  // `store` at byte `offset` + the slice's while paged out (deferred values, ABI 1.9).
  void write_slice(size_t b, const float* values, const ParamStore& store, uint64_t offset);
  // Casts this rank's slice of bucket b out of the parameters' `data` into `slice` (zeros for
  // a parameter registered without data).
  void fill_slice(const Caster& caster, const std::vector<ParamRecord>& params, size_t b,
                  float* slice) const;

  // The shards' ranges with master, grad and model NULL (ABI 1.8 shard_ranges).
  const std::vector<strata_shard>& ranges();
  // Points every shard's grad into `grads`, an fp32 partition laid out like the masters.
  const std::vector<strata_shard>& shards_with_grads(float* grads);
  // The partition (layout offsets), or nullptr when the masters are the parameters' `data`.
  const float* data() const { return storage_ != nullptr ? storage_ : master_.data(); }
  float* data() { return storage_ != nullptr ? storage_ : master_.data(); }

 private:
  void add_shard(const OwnedRange& r, float* master);
  void point_shards();  // at data()

  const PartitionLayout* layout_ = nullptr;
  int32_t dtype_ = STRATA_F32;
  sdk::Host host_;
  Buffer<float> master_;
  float* storage_ = nullptr;  // not owned: the param store's memory (or its mapping)
  bool mapped_ = false;       // storage_ is the disk store's mapping, between page_in and out
  void advise_mapped(int advice) const;  // madvise over the mapped masters
  std::vector<OwnedRange> ranges_;
  std::vector<strata_shard> shards_;
  std::vector<strata_shard> ranges_only_;  // ranges(): the shards without buffers
};

}  // namespace strata::zero
