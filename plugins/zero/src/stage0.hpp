// ZeRO stage 0: plain data parallelism. Every rank keeps the whole model; gradients are averaged
// over ranks in fusion buckets that start reducing while backward is still running.
#pragma once

#include "bucket_plan.hpp"
#include "comm_link.hpp"
#include "full_grads.hpp"
#include "stage.hpp"
#include "stage0_reducer.hpp"

#include <memory>

namespace strata::zero {

class Stage0 final : public Stage {
 public:
  Stage0(const ZeroConfig& config, const sdk::Host& host);

  int number() const override { return 0; }
  bool shards_replicated() const override { return true; }
  void check_param(const ParamRecord& param) const override;
  void finalize(const std::vector<ParamRecord>& params,
                const std::vector<GroupRecord>& groups) override;
  void grad_ready(uint32_t index, bool boundary) override;
  void finish_reduce() override;
  const std::vector<strata_shard>& owned_shards() override { return shards_; }
  void publish() override;
  void zero_grad() override;
  void param_view(uint32_t index, void** data, void** grad) const override;

 private:
  void log_plan(const BucketPlan& plan) const;

  sdk::Host host_;
  CommLink comm_;
  uint64_t bucket_capacity_;
  std::vector<ParamRecord> params_;  // grad filled in where the host gave none
  FullGrads full_grads_;
  std::vector<strata_shard> shards_;
  std::unique_ptr<Stage0Reducer> reducer_;  // after finalize
};

}  // namespace strata::zero
