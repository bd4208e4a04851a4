#include "stage2.hpp"

#include "agreement.hpp"
#include "partition_setup.hpp"
#include "publisher.hpp"

#include <string>

namespace strata::zero {

void Stage2::finalize(const std::vector<ParamRecord>& params,
                      const std::vector<GroupRecord>& groups) {
  params_ = params;
  groups_ = GroupState(groups, params.size());
  dtype_ = partitioned_model_dtype(params_, caster_, comm_, 2);
  require_grad_or_group(params_, groups_, 2);
  layout_ = PartitionLayout(
      plan_buckets(element_counts(params_), config_.reduce_bucket_size, group_keys(groups_)),
      comm_.size(), comm_.rank());
  check_ranks_agree(comm_, params_, groups, layout_.plan(), persistent_params(layout_));
  // fp32: the masters are this rank's ranges of the parameters (no second copy).
  masters_ = MasterPartition(host_, caster_, layout_, params_, dtype_, dtype_ == STRATA_F32);
  const size_t copies = masters_.request_model_copies(params_);
  grads_ = GradPartition(host_, caster_, layout_, params_, dtype_, config_.contiguous_gradients);
  reducer_ = std::make_unique<PartitionReducer>(
      host_, comm_, layout_, params_.size(), grads_, config_.overlap_comm,
      reduce_piece(config_.reduce_bucket_size, layout_.ranks()), config_.communication_dtype);
  calls_ = std::make_unique<GroupCalls>(comm_, groups_, params_, *reducer_, grads_);
  log_partition_plan(host_, 2, layout_, params_.size(), dtype_, config_);
  log_model_copies(host_, 2, dtype_, copies);
}

void Stage2::grad_ready(uint32_t index, bool /*boundary*/) {
  if (!reducer_->mark(index)) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
              "grad_ready: parameter " + std::to_string(index) + " (" + params_[index].name +
                  ") already finished its gradient in this micro-batch");
  }
  // With groups, gather/release run collectives of their own: buckets then start at those calls,
  // by agreement, never here (the order of collectives must be the same on every rank).
  if (groups_.empty()) reducer_->start_complete();
}

void Stage2::gather(uint32_t group, uint32_t flags) { reducer_->start(calls_->gather(group, flags)); }

void Stage2::release(uint32_t group) { reducer_->start(calls_->release(group)); }

void Stage2::end_micro_step(bool boundary) {
  calls_->end_micro_step(boundary);
  // Parameters never finished contribute what their buffers hold (lent but never written: 0).
  reducer_->finish_round();
  grads_.new_round();
  if (boundary) boundary_reduced_ = true;
}

void Stage2::finish_reduce() {
  // A host driving the plugin without end_micro_step (ABI 1.0 style) still gets its last
  // micro-batch reduced.
  if (!boundary_reduced_) end_micro_step(true);
  boundary_reduced_ = false;
  grads_.to_fp32();
}

const std::vector<strata_shard>& Stage2::owned_shards() {
  return masters_.shards_with_grads(grads_.fp32());
}

void Stage2::publish() {
  const int64_t begin = tracer_.now();
  const uint64_t bytes = publish_by_allgather(
      host_, comm_, layout_, params_, dtype_,
      allgather_piece(config_.allgather_bucket_size, comm_.size()), masters_.data());
  tracer_.span("publish", begin, -1, bytes);
}

void Stage2::zero_grad() {
  // The engine always completes the micro-batch first. If a caller did not, complete what
  // started so that no collective is left dangling and no late result lands after the zeroing.
  if (reducer_->in_flight()) {
    reducer_->finish_round();
  } else {
    reducer_->reset_round();
  }
  grads_.zero();
  boundary_reduced_ = false;
}

void Stage2::param_view(uint32_t index, void** data, void** grad) const {
  *data = params_[index].data;
  *grad = grads_.view(index);
}

}  // namespace strata::zero
