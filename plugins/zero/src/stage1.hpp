// ZeRO stage 1: the fp32 master copy and the optimizer state are partitioned. Whole gradients
// stay with every rank across micro-batches (host buffers, or ours where the host gave none) and
// are reduce-scattered only at the accumulation boundary, into a transient fp32 gradient
// partition (transient_grads.hpp). After the step, publish allgathers the updated parameters
// back into every rank's `data` (partitioned_stage.hpp has what stages 1-3 share).
#pragma once

#include "full_grads.hpp"
#include "partitioned_stage.hpp"
#include "transient_grads.hpp"

namespace strata::zero {

class Stage1 final : public PartitionedStage {
 public:
  Stage1(const ZeroConfig& config, const sdk::Host& host) : PartitionedStage(config, host, 1) {}
  // The reducer (the base's) goes before the transient gradients it writes into.
  ~Stage1() override { reducer_.reset(); }

  void check_param(const ParamRecord& param) const override { check_host_param(param, 1); }
  void finalize(const std::vector<ParamRecord>& params,
                const std::vector<GroupRecord>& groups) override;
  void grad_ready(uint32_t index, bool boundary) override;
  void end_micro_step(bool boundary) override;
  void finish_reduce() override;
  const std::vector<strata_shard>& owned_shards() override;
  void zero_grad() override;
  void gather(uint32_t group, uint32_t flags) override;
  void release(uint32_t group) override;
  void param_view(uint32_t index, void** data, void** grad) const override;

 private:
  FullGrads full_grads_;  // params_' grad filled in where the host gave none
  TransientGrads grads_;
};

}  // namespace strata::zero
