#include "partitioned_stage.hpp"

#include "agreement.hpp"
#include "partition_setup.hpp"

#include <string>

namespace strata::zero {

void PartitionedStage::take_params(const std::vector<ParamRecord>& params,
                                   const std::vector<GroupRecord>& groups) {
  params_ = params;
  groups_ = GroupState(groups, params.size());
  dtype_ = partitioned_model_dtype(params_, caster_, comm_, stage_);
}

void PartitionedStage::make_reducer(ReduceTarget& grads) {
  reducer_ = std::make_unique<PartitionReducer>(
      host_, comm_, layout_, params_.size(), grads, config_.overlap_comm,
      reduce_piece(config_.reduce_bucket_size, layout_.ranks()), config_.communication_dtype);
}

void PartitionedStage::log_plan(size_t model_copies) const {
  log_partition_plan(host_, stage_, layout_, params_.size(), dtype_, config_);
  log_model_copies(host_, stage_, dtype_, model_copies);
}

void PartitionedStage::settle_reductions() {
  if (reducer_->in_flight()) {
    reducer_->finish_round();
  } else {
    reducer_->reset_round();
  }
}

void PartitionedStage::mark_ready(uint32_t index, const char* twice) {
  if (!reducer_->mark(index)) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "grad_ready: parameter " + std::to_string(index) +
                                               " (" + params_[index].name + ") " + twice);
  }
}

void GradPartitionStage::make_grads(bool transient_only) {
  grads_ = GradPartition(host_, caster_, layout_, params_, dtype_, config_.contiguous_gradients,
                         transient_only);
  make_reducer(grads_);
  calls_ = std::make_unique<GroupCalls>(comm_, groups_, params_, *reducer_, grads_);
}

void GradPartitionStage::grad_ready(uint32_t index, bool /*boundary*/) {
  mark_ready(index, "already finished its gradient in this micro-batch");
  // With groups, gather/release run collectives of their own: buckets then start at those calls,
  // by agreement, never here (the order of collectives must be the same on every rank).
  if (groups_.empty()) reducer_->start_complete();
}

void GradPartitionStage::finish_micro_batch(bool boundary) {
  // Parameters never finished contribute what their buffers hold (lent but never written: 0).
  reducer_->finish_round();
  grads_.new_round();  // frees the spare buffers
  if (boundary) boundary_reduced_ = true;
}

void GradPartitionStage::finish_reduce() {
  // A host driving the plugin without end_micro_step (ABI 1.0 style) still gets its last
  // micro-batch reduced.
  if (!boundary_reduced_) end_micro_step(true);
  boundary_reduced_ = false;
  grads_.to_fp32();
}

const std::vector<strata_shard>& GradPartitionStage::owned_shards() {
  return masters_.shards_with_grads(grads_.fp32());
}

void GradPartitionStage::param_view(uint32_t index, void** data, void** grad) const {
  *data = params_[index].data;
  *grad = grads_.view(index);
}

void GradPartitionStage::zero_grads() {
  settle_reductions();
  grads_.zero();
  boundary_reduced_ = false;
}

}  // namespace strata::zero
