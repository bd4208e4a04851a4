// ZeRO stage 2: gradients are partitioned too. Every micro-batch, as buckets complete (grad_ready,
// or the release of a group gathered for backward), they are reduce-scattered into each rank's
// persistent gradient partition (model dtype, grad_partition.hpp), which accumulates over the
// micro-batches; lent and host gradient buffers are emptied as they are read, so no rank keeps
// whole gradients past a bucket in flight. end_micro_step completes the micro-batch's reductions.
//
// gather/release are collective here (release starts reductions): each one is agreed on first
// (group_calls.hpp), and when groups exist buckets start only at those agreed points. What stages
// 2 and 3 share is GradPartitionStage's (partitioned_stage.hpp); this file holds the rest.
#pragma once

#include "partitioned_stage.hpp"

namespace strata::zero {

class Stage2 final : public GradPartitionStage {
 public:
  Stage2(const ZeroConfig& config, const sdk::Host& host) : GradPartitionStage(config, host, 2) {}

  void check_param(const ParamRecord& param) const override { check_host_param(param, 2); }
  void finalize(const std::vector<ParamRecord>& params,
                const std::vector<GroupRecord>& groups) override;
  void gather(uint32_t group, uint32_t flags) override;
  void release(uint32_t group) override;
  void end_micro_step(bool boundary) override;
  void zero_grad() override;
};

}  // namespace strata::zero
