// What stages 1-3 share: one model dtype, buckets keyed by group, the partition layout, the fp32
// master partition filled from the broadcast parameters, the owned shards, and publish by
// allgather. Each stage adds where its gradients live and how they are reduced.
#pragma once

#include "comm_link.hpp"
#include "dtype_cast.hpp"
#include "partition_layout.hpp"
#include "stage.hpp"

#include <strata/plugin.hpp>

#include <functional>
#include <vector>

namespace strata::zero {

class ShardedStage : public Stage {
 public:
  ShardedStage(const ZeroConfig& config, const sdk::Host& host, int stage);

  int number() const override { return stage_; }
  bool shards_replicated() const override { return false; }
  void check_param(const ParamRecord& param) const override;
  void finalize(const std::vector<ParamRecord>& params,
                const std::vector<GroupRecord>& groups) final;
  const std::vector<strata_shard>& owned_shards() final;
  void publish() override;

 protected:
  // Parameters sharing a bucket share this key. Default: the group (+1; 0 for no group), so that
  // a released group completes whole buckets.
  virtual uint64_t bucket_key(uint32_t param) const;
  // Whether the buckets of `key` keep their parameters only in the partitions (stage 3).
  virtual bool partitioned_key(uint64_t /*key*/) const { return false; }
  // Stage-specific checks and changes before the plan (e.g. whole gradient buffers at stage 1).
  virtual void prepare(std::vector<ParamRecord>& /*params*/) {}
  // The layout and the masters exist: allocate the stage's own state.
  virtual void on_finalized() = 0;
  // The fp32 gradient partition the shards point into, created if the stage keeps it transient.
  virtual float* fp32_grads() = 0;
  // Stage 3: refresh the parameter partition of a partitioned bucket from the masters.
  virtual void publish_partitioned(size_t /*bucket*/) {}

  size_t persistent_params() const;  // parameters in non-partitioned buckets (stage 3 counts)

  // ABI 1.2, half models: the shards of partitioned buckets name their place in `slice_of(b)` (the
  // bucket's model-dtype slice) as their model copy, which the step then writes (the offload
  // plugin in its pass, or the runtime), so publish has nothing to round for those buckets.
  void lend_model_copies(const std::function<void*(size_t bucket)>& slice_of);

  sdk::Host host_;
  ZeroConfig config_;
  CommLink comm_;
  Caster caster_;
  std::vector<ParamRecord> params_;
  int32_t dtype_ = STRATA_F32;  // the model dtype: every parameter's
  PartitionLayout layout_;
  sdk::HostArray<float> master_;  // this rank's partition, STRATA_MEM_MASTER

 private:
  void choose_dtype();
  void fill_masters();
  void log_plan() const;

  int stage_;
  std::vector<OwnedRange> ranges_;
  std::vector<strata_shard> shards_;
  bool model_copies_lent_ = false;
};

}  // namespace strata::zero
