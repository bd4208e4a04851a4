// ZeRO stage 1: the fp32 master copy and the optimizer state are partitioned. Whole gradients
// stay with every rank across micro-batches (host buffers, or ours where the host gave none) and
// are reduce-scattered only at the accumulation boundary, into a transient fp32 gradient
// partition (allocated by the step's first reduction, freed by zero_grad). publish() allgathers
// the updated parameters back into every rank's `data`.
#pragma once

#include "full_grads.hpp"
#include "partition_reducer.hpp"
#include "sharded_stage.hpp"

#include <memory>

namespace strata::zero {

class Stage1 final : public ShardedStage, private ReduceTarget {
 public:
  Stage1(const ZeroConfig& config, const sdk::Host& host) : ShardedStage(config, host, 1) {}

  void grad_ready(uint32_t index, bool boundary) override;
  void finish_reduce() override;
  void zero_grad() override;
  void param_view(uint32_t index, void** data, void** grad) const override;

 private:
  void prepare(std::vector<ParamRecord>& params) override;
  void on_finalized() override;
  float* fp32_grads() override;

  void fill(size_t bucket, uint64_t first, uint64_t count, float* out) override;
  void deliver(size_t bucket, uint64_t offset, uint64_t count, const float* values) override;

  FullGrads full_grads_;
  sdk::HostArray<float> grad_partition_;  // transient: between a step's reductions and zero_grad
  std::unique_ptr<PartitionReducer> reducer_;
};

}  // namespace strata::zero
