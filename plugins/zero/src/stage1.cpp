#include "stage1.hpp"

#include <cstring>
#include <string>

namespace strata::zero {

void Stage1::prepare(std::vector<ParamRecord>& params) {
  // Parameters registered without a gradient buffer (ABI 1.1) get a whole one of ours.
  full_grads_ = FullGrads(host_, params);
}

void Stage1::on_finalized() {
  reducer_ = std::make_unique<PartitionReducer>(host_, comm_, layout_, params_.size(),
                                                static_cast<ReduceTarget&>(*this),
                                                config_.overlap_comm,
                                                reduce_piece(config_.reduce_bucket_size,
                                                             layout_.ranks()));
}

void Stage1::grad_ready(uint32_t index, bool boundary) {
  // Before the boundary the host keeps accumulating into the whole gradients: nothing to do.
  // No other collective runs during a stage-1 micro-batch, so buckets may start right here.
  if (!boundary) return;
  if (!reducer_->mark(index)) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
              "grad_ready: parameter " + std::to_string(index) + " (" + params_[index].name +
                  ") was already reported ready in this step");
  }
  reducer_->start_complete();
}

void Stage1::finish_reduce() {
  fp32_grads();  // exists even when no bucket delivers (a model of empty parameters)
  reducer_->finish_round();
}

float* Stage1::fp32_grads() {
  if (grad_partition_.data() == nullptr) {
    grad_partition_ =
        sdk::HostArray<float>(host_, layout_.partition_elements(), STRATA_MEM_GRADS);
  }
  return grad_partition_.data();
}

void Stage1::fill(size_t b, uint64_t first, uint64_t count, float* out) {
  fill_range(layout_, b, first, count, out,
             [&](const BucketSlot& slot, uint64_t param_offset, float* dst, uint64_t n) {
               caster_.convert(element_at(params_[slot.param_index].grad, dtype_, param_offset),
                               dtype_, dst, STRATA_F32, n);
             });
}

void Stage1::deliver(size_t b, uint64_t offset, uint64_t count, const float* values) {
  const BucketPartition& part = layout_.bucket(b);
  caster_.add_into(fp32_grads() + part.offset + offset, STRATA_F32, values, count);
}

void Stage1::zero_grad() {
  // The engine always calls finish_reduce first. If a caller did not, complete what started so
  // that no collective is left dangling and no late result lands in freed memory.
  if (reducer_->in_flight()) {
    reducer_->finish_round();
  } else {
    reducer_->reset_round();
  }
  FullGrads::zero(params_);
  grad_partition_ = sdk::HostArray<float>();
}

void Stage1::param_view(uint32_t index, void** data, void** grad) const {
  *data = params_[index].data;
  *grad = params_[index].grad;
}

}  // namespace strata::zero
