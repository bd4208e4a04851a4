#include "stage3.hpp"

#include "agreement.hpp"
#include "partition_setup.hpp"
#include "publisher.hpp"

#include <cstring>
#include <string>

namespace strata::zero {

namespace {

// Key = 2 * (group + 1) + persistent: buckets never mix groups, nor whole with partitioned.
std::vector<uint64_t> stage3_keys(const std::vector<ParamRecord>& params, const GroupState& groups,
                                  uint64_t persistence_threshold) {
  std::vector<uint64_t> keys = group_keys(groups);
  for (uint32_t p = 0; p < params.size(); ++p) {
    const bool persistent =
        groups.group_of(p) == kNoGroup || params[p].count <= persistence_threshold;
    keys[p] = 2 * keys[p] + (persistent ? 1 : 0);
  }
  return keys;
}

}  // namespace

void Stage3::finalize(const std::vector<ParamRecord>& params,
                      const std::vector<GroupRecord>& groups) {
  params_ = params;
  groups_ = GroupState(groups, params.size());
  dtype_ = partitioned_model_dtype(params_, caster_, comm_, 3);
  require_grad_or_group(params_, groups_, 3);
  BucketPlan plan =
      plan_buckets(element_counts(params_), config_.reduce_bucket_size,
                   stage3_keys(params_, groups_, config_.param_persistence_threshold));
  std::vector<bool> partitioned;
  for (const Bucket& b : plan.buckets) partitioned.push_back((b.key & 1) == 0);
  layout_ = PartitionLayout(std::move(plan), comm_.size(), comm_.rank(), partitioned);
  check_ranks_agree(comm_, params_, groups, layout_.plan(), persistent_params(layout_));
  // A partition even at fp32: partitioned parameters have no `data` to keep their masters in.
  masters_ = MasterPartition(host_, caster_, layout_, params_, dtype_);  // reads every `data`
  grads_ = GradPartition(host_, caster_, layout_, params_, dtype_, config_.contiguous_gradients);
  reducer_ = std::make_unique<PartitionReducer>(
      host_, comm_, layout_, params_.size(), grads_, config_.overlap_comm,
      reduce_piece(config_.reduce_bucket_size, layout_.ranks()), config_.communication_dtype);
  calls_ = std::make_unique<GroupCalls>(comm_, groups_, params_, *reducer_, grads_);
  gatherer_ = std::make_unique<ParamGatherer>(host_, comm_, layout_, params_, groups_, dtype_,
                                              config_, masters_.data());
  gatherer_->fill_from_params();  // debug builds poison partitioned `data` from here on
  // Partitioned parameters get their model copies in the parameter partition, where gather reads.
  const size_t copies =
      masters_.request_model_copies(params_, [this](size_t b) { return gatherer_->slice(b); });
  log_partition_plan(host_, 3, layout_, params_.size(), dtype_, config_);
  log_model_copies(host_, 3, dtype_, copies);
}

void Stage3::grad_ready(uint32_t index, bool /*boundary*/) {
  if (!reducer_->mark(index)) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
              "grad_ready: parameter " + std::to_string(index) + " (" + params_[index].name +
                  ") already finished its gradient in this micro-batch");
  }
  // With groups, buckets start only at the agreed gather/release calls (see stage 2).
  if (groups_.empty()) reducer_->start_complete();
}

// The timeline's "gather" and "release" spans cover the whole call: the sequence check, the
// parameters' movement and the bucket reductions it starts.
void Stage3::gather(uint32_t group, uint32_t flags) {
  const sdk::TraceScope span(tracer_, "gather", group, gatherer_->gathered_bytes(group));
  const uint64_t agreed = calls_->gather(group, flags);
  try {
    gatherer_->gather(group);
  } catch (...) {
    // E.g. out of memory for the gathered buffers: the gather did not happen.
    calls_->undo_gather(group);
    throw;
  }
  reducer_->start(agreed);
}

void Stage3::release(uint32_t group) {
  const sdk::TraceScope span(tracer_, "release", group);
  const uint64_t agreed = calls_->release(group);
  gatherer_->release(group);
  reducer_->start(agreed);
}

void Stage3::end_micro_step(bool boundary) {
  calls_->end_micro_step(boundary);
  gatherer_->end_micro_batch(boundary);  // drops prefetches nobody gathered
  // Parameters never finished contribute what their buffers hold (lent but never written: 0).
  reducer_->finish_round();
  grads_.new_round();
  if (boundary) boundary_reduced_ = true;
}

void Stage3::finish_reduce() {
  // A host driving the plugin without end_micro_step (ABI 1.0 style) still gets its last
  // micro-batch reduced.
  if (!boundary_reduced_) end_micro_step(true);
  boundary_reduced_ = false;
  grads_.to_fp32();
}

const std::vector<strata_shard>& Stage3::owned_shards() {
  return masters_.shards_with_grads(grads_.fp32());
}

void Stage3::publish() {
  const int64_t begin = tracer_.now();
  gatherer_->drop_cached();  // e.g. gathers between finish_reduce and publish: about to be stale
  // Partitioned parameters stay in the parameter partition, where gather reads them: a half
  // model's step wrote its model copies there, and an fp32 model's partition is its masters,
  // which the step updated in place. Only whole parameters move.
  const uint64_t bytes = publish_by_allgather(
      host_, comm_, layout_, params_, dtype_,
      allgather_piece(config_.allgather_bucket_size, comm_.size()), masters_.data());
  tracer_.span("publish", begin, -1, bytes);
}

void Stage3::zero_grad() {
  // As stage 2: complete what a caller left in flight before zeroing.
  if (reducer_->in_flight()) {
    reducer_->finish_round();
  } else {
    reducer_->reset_round();
  }
  grads_.zero();
  boundary_reduced_ = false;
}

void Stage3::param_view(uint32_t index, void** data, void** grad) const {
  *data = gatherer_->partitioned(index) ? gatherer_->data(index) : params_[index].data;
  *grad = grads_.view(index);
}

}  // namespace strata::zero
