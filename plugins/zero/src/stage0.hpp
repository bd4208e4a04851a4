// ZeRO stage 0: plain data parallelism. Every rank keeps the whole model; gradients are averaged
// over ranks in fusion buckets that start reducing while backward is still running.
//
// fp32 models: the parameters are the masters and the host's gradient buffers hold the averages.
// f16/bf16 models: every rank also keeps fp32 masters and averages in fp32 (fp32_copies.hpp); the
// shards ask for their model copies in the parameters themselves, so publish has nothing to do.
#pragma once

#include "bucket_plan.hpp"
#include "comm_link.hpp"
#include "dtype_cast.hpp"
#include "fp32_copies.hpp"
#include "full_grads.hpp"
#include "group_state.hpp"
#include "stage.hpp"
#include "stage0_buffers.hpp"
#include "stage0_reducer.hpp"

#include <memory>

namespace strata::zero {

class Stage0 final : public Stage {
 public:
  Stage0(const ZeroConfig& config, const sdk::Host& host);

  int number() const override { return 0; }
  bool shards_replicated() const override { return true; }
  void check_param(const ParamRecord& param) const override { check_host_param(param, 0); }
  void finalize(const std::vector<ParamRecord>& params,
                const std::vector<GroupRecord>& groups) override;
  void grad_ready(uint32_t index, bool boundary) override;
  void end_micro_step(bool boundary) override;
  void finish_reduce() override;
  const std::vector<strata_shard>& owned_shards() override;
  void publish() override;
  void zero_grad() override;
  void gather(uint32_t group, uint32_t flags) override;
  void release(uint32_t group) override;
  void param_view(uint32_t index, void** data, void** grad) const override;

 private:
  void log_plan() const;

  sdk::Host host_;
  sdk::Tracer tracer_;
  CommLink comm_;
  Caster caster_;
  uint64_t bucket_capacity_;
  int32_t comm_dtype_;  // communication_data_type
  std::vector<ParamRecord> params_;  // grad filled in where the host gave none
  GroupState groups_;
  int32_t dtype_ = STRATA_F32;  // the model dtype: every parameter's
  BucketPlan plan_;
  FullGrads full_grads_;
  std::vector<strata_shard> shards_;
  // Declared before the reducer, whose destructor may still wait for reductions into them.
  std::unique_ptr<Fp32Buckets> fp32_buckets_;  // fp32 models
  std::unique_ptr<Fp32Copies> copies_;         // f16/bf16 models
  std::unique_ptr<Stage0Reducer> reducer_;     // after finalize
};

}  // namespace strata::zero
