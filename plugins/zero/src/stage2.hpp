// ZeRO stage 2: gradients are partitioned too. Every micro-batch, as buckets complete (grad_ready,
// or the release of a group gathered for backward), they are reduce-scattered into each rank's
// persistent gradient partition (model dtype), which accumulates over the micro-batches; lent and
// host gradient buffers are emptied as they are read, so no rank keeps whole gradients past a
// bucket in flight. end_micro_step completes the micro-batch's reductions.
//
// gather/release are collective here (release starts reductions): each one first runs the
// sequence check, and when groups exist buckets start only at those agreed points.
#pragma once

#include "lent_grads.hpp"
#include "partition_reducer.hpp"
#include "sequence_check.hpp"
#include "sharded_stage.hpp"

#include <memory>

namespace strata::zero {

class Stage2 : public ShardedStage, private ReduceTarget {
 public:
  Stage2(const ZeroConfig& config, const sdk::Host& host) : Stage2(config, host, 2) {}

  void grad_ready(uint32_t index, bool boundary) override;
  void finish_reduce() override;
  void zero_grad() override;
  void gather(uint32_t group, uint32_t flags) final;
  void release(uint32_t group) final;
  void end_micro_step(bool boundary) final;
  void param_view(uint32_t index, void** data, void** grad) const override;

 protected:
  Stage2(const ZeroConfig& config, const sdk::Host& host, int stage)
      : ShardedStage(config, host, stage) {}

  void prepare(std::vector<ParamRecord>& params) override;
  void on_finalized() override;
  float* fp32_grads() override;
  // Stage 3's parameter movement, after the sequence check and the group bookkeeping.
  virtual void gathered(uint32_t /*group*/) {}
  virtual void released(uint32_t /*group*/) {}
  virtual void micro_batch_ended(bool /*boundary*/) {}

 private:
  const float* ready_buffer(size_t bucket) override;
  void fill(size_t bucket, uint64_t first, uint64_t count, float* out) override;
  void sent(size_t bucket) override;
  void deliver(size_t bucket, uint64_t offset, uint64_t count, const float* values) override;
  void completed(size_t bucket) override;

  void complete_micro_batch(bool boundary);
  void* partition_at(uint64_t offset) const;

  sdk::HostArray<unsigned char> grad_partition_;  // model dtype, accumulates over micro-batches
  sdk::HostArray<float> fp32_copy_;  // non-fp32 models: from finish_reduce to zero_grad
  LentGrads lent_;
  std::unique_ptr<SequenceCheck> sequence_;
  std::unique_ptr<PartitionReducer> reducer_;
  std::vector<uint8_t> direct_;  // per bucket: sent straight from its lent buffer
  bool boundary_reduced_ = false;  // end_micro_step(boundary) ran since the last finish_reduce
};

}  // namespace strata::zero
