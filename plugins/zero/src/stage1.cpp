#include "stage1.hpp"

#include "agreement.hpp"
#include "partition_setup.hpp"

namespace strata::zero {

void Stage1::finalize(const std::vector<ParamRecord>& params,
                      const std::vector<GroupRecord>& groups) {
  take_params(params, groups);
  // Parameters registered without a gradient buffer (ABI 1.1) get a whole one of ours.
  full_grads_ = FullGrads(host_, params_);
  layout_ = PartitionLayout(
      plan_buckets(element_counts(params_), config_.reduce_bucket_size, group_keys(groups_)),
      comm_.size(), comm_.rank());
  check_ranks_agree(comm_, params_, groups, layout_.plan(), persistent_params(layout_));
  // fp32: the masters are this rank's ranges of the parameters (no second copy).
  masters_ = MasterPartition(host_, caster_, layout_, params_, dtype_, dtype_ == STRATA_F32);
  const size_t copies = masters_.request_model_copies(params_);
  grads_ = TransientGrads(host_, caster_, layout_, params_, dtype_);
  make_reducer(grads_);
  log_plan(copies);
}

void Stage1::grad_ready(uint32_t index, bool boundary) {
  // Before the boundary the host keeps accumulating into the whole gradients: nothing to do.
  // No other collective runs during a stage-1 micro-batch, so buckets may start right here.
  if (!boundary) return;
  mark_ready(index, "was already reported ready in this step");
  reducer_->start_complete();
}

// Stage 1 moves nothing on gather and release: they only check the call order, locally.
void Stage1::gather(uint32_t group, uint32_t flags) { groups_.begin_gather(group, flags); }
void Stage1::release(uint32_t group) { groups_.end_gather(group); }
void Stage1::end_micro_step(bool /*boundary*/) { groups_.expect_none_gathered(); }

void Stage1::finish_reduce() {
  grads_.fp32();  // exists even when no bucket delivers (a model of empty parameters)
  reducer_->finish_round();
}

const std::vector<strata_shard>& Stage1::owned_shards() {
  // The optimizer's init_state needs gradient pointers before the first reduction too.
  return masters_.shards_with_grads(grads_.fp32());
}

void Stage1::zero_grad() {
  settle_reductions();
  FullGrads::zero(params_, Memory(host_));
  grads_.drop();
}

void Stage1::param_view(uint32_t index, void** data, void** grad) const {
  *data = params_[index].data;
  *grad = params_[index].grad;
}

}  // namespace strata::zero
