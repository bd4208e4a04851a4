#include "stage2.hpp"

#include "agreement.hpp"
#include "partition_setup.hpp"

namespace strata::zero {

void Stage2::finalize(const std::vector<ParamRecord>& params,
                      const std::vector<GroupRecord>& groups) {
  take_params(params, groups);
  require_grad_or_group(params_, groups_, 2);
  layout_ = PartitionLayout(
      plan_buckets(element_counts(params_), config_.reduce_bucket_size, group_keys(groups_)),
      comm_.size(), comm_.rank());
  check_ranks_agree(comm_, params_, groups, layout_.plan(), persistent_params(layout_));
  // fp32: the masters are this rank's ranges of the parameters (no second copy).
  masters_ = MasterPartition(host_, caster_, layout_, params_, dtype_, dtype_ == STRATA_F32);
  const size_t copies = masters_.request_model_copies(params_);
  make_grads();
  log_plan(copies);
}

void Stage2::gather(uint32_t group, uint32_t flags) { reducer_->start(calls_->gather(group, flags)); }

void Stage2::release(uint32_t group) { reducer_->start(calls_->release(group)); }

void Stage2::end_micro_step(bool boundary) {
  calls_->end_micro_step(boundary);
  finish_micro_batch(boundary);
}

void Stage2::zero_grad() { zero_grads(); }

}  // namespace strata::zero
