#include "stage3.hpp"

#include "agreement.hpp"
#include "partition_setup.hpp"
#include "publisher.hpp"

#include <algorithm>
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
  take_params(params, groups);
  require_grad_or_group(params_, groups_, 3);
  BucketPlan plan =
      plan_buckets(element_counts(params_), config_.reduce_bucket_size,
                   stage3_keys(params_, groups_, config_.param_persistence_threshold));
  std::vector<bool> partitioned;
  for (const Bucket& b : plan.buckets) partitioned.push_back((b.key & 1) == 0);
  layout_ = PartitionLayout(std::move(plan), comm_.size(), comm_.rank(), partitioned);
  check_ranks_agree(comm_, params_, groups, layout_.plan(), persistent_params(layout_));
  hold_deferred_whole();
  writing_.assign(groups.size(), 0);
  open_store();
  // A partition even at fp32: partitioned parameters have no `data` to keep their masters in.
  if (store_.on_disk()) {  // straight into the store, one slice at a time
    masters_ = MasterPartition(host_, caster_, layout_, params_, dtype_, store_, masters_at_);
  } else {
    float* in_store = store_.active() ? reinterpret_cast<float*>(store_.memory() + masters_at_)
                                      : nullptr;
    masters_ = MasterPartition(host_, caster_, layout_, params_, dtype_, false, in_store);
  }
  // On a drive the gradient partition exists from the step's first reduction to zero_grad, as a
  // half model's does anyway: finalize, where the host still holds its whole parameters, then
  // allocates nothing proportional to the model but this rank's slices in flight.
  make_grads(/*transient_only=*/store_.on_disk());
  gatherer_ = std::make_unique<ParamGatherer>(host_, comm_, layout_, params_, groups_, dtype_,
                                              config_, masters_.data(), store_, masters_at_,
                                              grads_.spares());
  gatherer_->fill_from_params();  // debug builds poison partitioned `data` from here on
  // Partitioned parameters get their model copies in the parameter partition, where gather reads
  // (on a drive: in the partition staged for the step, so they are asked for at each page_in).
  const size_t copies =
      masters_.request_model_copies(params_, [this](size_t b) { return gatherer_->slice(b); });
  log_plan(copies);
}

void Stage3::hold_deferred_whole() {
  for (uint32_t p = 0; p < params_.size(); ++p) {
    if (params_[p].data != nullptr || params_[p].count == 0) continue;
    const uint32_t b = layout_.plan().bucket_of[p];
    if (b != kNoBucket && layout_.bucket(b).partitioned) continue;  // its slices start at zero
    // Kept whole (the persistence threshold): zeroed host memory of this plugin's, which
    // param_view gives as its data until destroy, as a registered buffer would be.
    deferred_whole_.emplace_back(host_, params_[p].count * sdk::dtype_size(params_[p].dtype),
                                 STRATA_MEM_PARAMS);
    params_[p].data = deferred_whole_.back().data();
  }
}

void Stage3::open_store() {
  const uint64_t param_bytes =
      dtype_ == STRATA_F32
          ? 0
          : (layout_.param_partition_elements() * sdk::dtype_size(dtype_) + 63) / 64 * 64;
  store_ = ParamStore(host_, param_bytes + layout_.partition_elements() * sizeof(float));
  masters_at_ = param_bytes;
  if (store_.active() && Memory(host_).on_device()) {
    sdk::fail(STRATA_ERR_UNSUPPORTED,
              "offload_param with parameters in CUDA device memory is not implemented; use "
              "offload_param.device none (or host parameters)");
  }
}

void Stage3::page_in() {
  if (!store_.on_disk() || masters_.resident()) return;
  masters_.page_in(store_, masters_at_);
  gatherer_->stage_partition();
  masters_.request_model_copies(params_, [this](size_t b) { return gatherer_->slice(b); });
}

void Stage3::page_out() {
  if (!store_.on_disk()) return;
  gatherer_->unstage_partition();
  masters_.page_out(store_, masters_at_);
}

// The timeline's "gather" and "release" spans cover the whole call: the sequence check, the
// parameters' movement and the bucket reductions it starts.
void Stage3::gather(uint32_t group, uint32_t flags) {
  const sdk::TraceScope span(tracer_, "gather", group, gatherer_->gathered_bytes(group));
  const bool write = (flags & STRATA_GATHER_FOR_WRITE) != 0;
  if (write && Memory(host_).on_device()) {
    sdk::fail(STRATA_ERR_UNSUPPORTED, "gather: STRATA_GATHER_FOR_WRITE with parameters in CUDA "
                                      "device memory is not implemented");
  }
  const uint64_t agreed = calls_->gather(group, flags);
  if ((flags & STRATA_GATHER_FOR_BACKWARD) != 0 && !in_backward_) {
    // The host's activations peak where its backward starts: the spare buffers forward left
    // are freed there, so that they do not add to that peak (backward refills them).
    in_backward_ = true;
    grads_.spares()->clear();
  }
  page_out();  // resident since init_state or a checkpoint save: the store is the truth again
  try {
    // Writes are set-up, not the step's pattern: they stay out of the prefetch trace.
    gatherer_->gather(group, /*in_trace=*/!write);
  } catch (...) {
    // E.g. out of memory for the gathered buffers: the gather did not happen.
    calls_->undo_gather(group);
    throw;
  }
  if (write) writing_[group] = 1;
  reducer_->start(agreed);
}

void Stage3::release(uint32_t group) {
  const sdk::TraceScope span(tracer_, "release", group);
  const uint64_t agreed = calls_->release(group);
  if (group < writing_.size() && writing_[group] != 0) {
    writing_[group] = 0;
    write_back(group);
  }
  gatherer_->release(group);
  reducer_->start(agreed);
}

void Stage3::write_back(uint32_t group) {
  Buffer<float> fp32(host_, layout_.max_slice(), STRATA_MEM_MASTER);  // one slice at a time
  for (size_t b = 0; b < layout_.buckets().size(); ++b) {
    if (groups_.group_of(layout_.plan().buckets[b].slots.front().param_index) != group) continue;
    const BucketPartition& part = layout_.bucket(b);
    std::fill_n(fp32.data(), part.slice, 0.0f);  // the padding stays zero
    if (part.partitioned) {
      const void* mine = gatherer_->my_gathered_slice(b);
      if (dtype_ != STRATA_F32) gatherer_->write_slice(b, mine);
      caster_.convert(mine, dtype_, fp32.data(), STRATA_F32, part.slice);
    } else {
      masters_.fill_slice(caster_, params_, b, fp32.data());  // whole: the host wrote `data`
    }
    masters_.write_slice(b, fp32.data(), store_, masters_at_);
  }
}

void Stage3::end_micro_step(bool boundary) {
  calls_->end_micro_step(boundary);
  page_out();
  gatherer_->end_micro_batch(boundary);  // drops prefetches nobody gathered
  in_backward_ = false;
  finish_micro_batch(boundary);
}

const std::vector<strata_shard>& Stage3::owned_shards() {
  page_in();
  return GradPartitionStage::owned_shards();
}

const std::vector<strata_shard>& Stage3::shard_ranges() {
  // On a drive the masters stay there: init_state sizes its state from the ranges alone.
  return store_.on_disk() ? masters_.ranges() : owned_shards();
}

void Stage3::publish() {
  // Partitioned parameters stay in the parameter partition, where gather reads them: a half
  // model's step wrote its model copies there, and an fp32 model's partition is its masters,
  // which the step updated in place. Only whole parameters move.
  publish_whole(
      // e.g. gathers between finish_reduce and publish: about to be stale
      [this] { gatherer_->drop_cached(); },
      [this] { page_out(); });  // after the whole parameters read their masters
}

void Stage3::zero_grad() {
  page_out();  // e.g. resident since init_state: the step starts from the store
  zero_grads();
}

void Stage3::param_view(uint32_t index, void** data, void** grad) const {
  *data = gatherer_->partitioned(index) ? gatherer_->data(index) : params_[index].data;
  *grad = grads_.view(index);
}

}  // namespace strata::zero
