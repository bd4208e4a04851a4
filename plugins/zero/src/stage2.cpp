#include "stage2.hpp"

#include "full_grads.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace strata::zero {

using sdk::fail;

void Stage2::prepare(std::vector<ParamRecord>& params) {
  for (uint32_t i = 0; i < params.size(); ++i) {
    if (params[i].grad == nullptr && params[i].count > 0 && groups_.group_of(i) == kNoGroup) {
      fail(STRATA_ERR_INVALID_ARGUMENT,
           "parameter " + params[i].name + " has no gradient buffer and is in no group, so it "
           "could never receive a gradient at sharding stage " + std::to_string(number()) +
           ": register a grad buffer or put it in a group (gradients are lent to gathered groups)");
    }
  }
}

void Stage2::on_finalized() {
  grad_partition_ = sdk::HostArray<unsigned char>(
      host_, layout_.partition_elements() * sdk::dtype_size(dtype_), STRATA_MEM_GRADS);
  lent_ = LentGrads(host_, layout_, params_, dtype_, config_.contiguous_gradients);
  sequence_ = std::make_unique<SequenceCheck>(comm_, groups_);
  reducer_ = std::make_unique<PartitionReducer>(host_, comm_, layout_, params_.size(),
                                                static_cast<ReduceTarget&>(*this),
                                                config_.overlap_comm,
                                                reduce_piece(config_.reduce_bucket_size,
                                                             layout_.ranks()));
  direct_.assign(layout_.buckets().size(), 0);
}

void* Stage2::partition_at(uint64_t offset) const {
  return element_at(grad_partition_.data(), dtype_, offset);
}

void Stage2::grad_ready(uint32_t index, bool /*boundary*/) {
  if (!reducer_->mark(index)) {
    fail(STRATA_ERR_INVALID_ARGUMENT,
         "grad_ready: parameter " + std::to_string(index) + " (" + params_[index].name +
             ") already finished its gradient in this micro-batch");
  }
  // With groups, gather/release run collectives of their own: buckets then start at those calls,
  // by agreement, never here (the order of collectives must be the same on every rank).
  if (groups_.empty()) reducer_->start_complete();
}

void Stage2::gather(uint32_t group, uint32_t flags) {
  if (groups_.empty()) groups_.begin_gather(group, flags);  // throws: no group to gather
  const uint64_t agreed = sequence_->agree(SequenceOp::kGather, group, flags,
                                           reducer_->startable());
  groups_.begin_gather(group, flags);
  const std::vector<uint32_t>& members = groups_.group(group).params;
  if ((flags & STRATA_GATHER_FOR_BACKWARD) != 0) {
    for (uint32_t p : members) {
      if (reducer_->marked(p)) {
        groups_.end_gather(group);  // the call fails as a whole (alike on every rank)
        fail(STRATA_ERR_INVALID_ARGUMENT,
             "gather: parameter " + params_[p].name + " of " + groups_.describe(group) +
                 " already finished its gradient in this micro-batch (grad_ready, or an earlier "
                 "release after a gather for backward)");
      }
    }
    lent_.lend(members);
  }
  try {
    gathered(group);
  } catch (...) {
    // E.g. over stage3_max_live_parameters (alike on every rank): the gather did not happen.
    lent_.unlend(members);
    groups_.end_gather(group);
    throw;
  }
  reducer_->start(agreed);
}

void Stage2::release(uint32_t group) {
  if (groups_.empty()) groups_.end_gather(group);  // throws: no group to release
  // A group gathered for backward finishes its parameters' gradients for this micro-batch.
  const bool backward = group < groups_.size() && groups_.gathered(group) &&
                        groups_.for_backward(group);
  static const std::vector<uint32_t> kNone;
  const std::vector<uint32_t>& finishing = backward ? groups_.group(group).params : kNone;
  const uint64_t agreed =
      sequence_->agree(SequenceOp::kRelease, group, 0, reducer_->startable(finishing));
  groups_.end_gather(group);
  for (uint32_t p : finishing) reducer_->mark(p);  // already marked by grad_ready: fine
  lent_.unlend(finishing);
  released(group);
  reducer_->start(agreed);
}

void Stage2::end_micro_step(bool boundary) {
  if (!groups_.empty()) sequence_->agree(SequenceOp::kEndMicroStep, -1, boundary ? 1 : 0, 0);
  complete_micro_batch(boundary);
}

void Stage2::complete_micro_batch(bool boundary) {
  groups_.expect_none_gathered();
  micro_batch_ended(boundary);
  // Parameters never finished contribute what their buffers hold (lent but never written: 0).
  reducer_->finish_round();
  lent_.new_round();
  if (boundary) {
    sequence_->new_step();
    boundary_reduced_ = true;
  }
}

void Stage2::finish_reduce() {
  // A host driving the plugin without end_micro_step (ABI 1.0 style) still gets its last
  // micro-batch reduced.
  if (!boundary_reduced_) end_micro_step(true);
  boundary_reduced_ = false;
  float* grads = fp32_grads();
  if (dtype_ != STRATA_F32) {
    caster_.convert(grad_partition_.data(), dtype_, grads, STRATA_F32,
                    layout_.partition_elements());
  }
}

float* Stage2::fp32_grads() {
  if (dtype_ == STRATA_F32) return reinterpret_cast<float*>(grad_partition_.data());
  if (fp32_copy_.data() == nullptr) {
    fp32_copy_ = sdk::HostArray<float>(host_, layout_.partition_elements(), STRATA_MEM_GRADS);
  }
  return fp32_copy_.data();
}

void Stage2::zero_grad() {
  // The engine always completes the micro-batch first. If a caller did not, complete what
  // started so that no collective is left dangling and no late result lands after the zeroing.
  if (reducer_->in_flight()) {
    reducer_->finish_round();
  } else {
    reducer_->reset_round();
  }
  std::memset(grad_partition_.data(), 0, layout_.partition_elements() * sdk::dtype_size(dtype_));
  FullGrads::zero(params_);  // the host-owned ones (ours are lent, and freed once reduced)
  fp32_copy_ = sdk::HostArray<float>();
  boundary_reduced_ = false;
}

void Stage2::param_view(uint32_t index, void** data, void** grad) const {
  *data = params_[index].data;
  *grad = params_[index].grad != nullptr ? params_[index].grad : lent_.view(index);
}

const float* Stage2::ready_buffer(size_t b) {
  void* whole = lent_.bucket_buffer(b);
  if (dtype_ != STRATA_F32 || whole == nullptr) return nullptr;
  // fp32 and contiguous: the lent bucket buffer is already what the reduction sends. Host-owned
  // gradients of the bucket join it, and the host starts the next micro-batch from zero.
  auto* out = static_cast<float*>(whole);
  for (const BucketSlot& slot : layout_.plan().buckets[b].slots) {
    void* host = params_[slot.param_index].grad;
    if (host == nullptr) continue;
    std::memcpy(out + slot.offset, host, slot.count * sizeof(float));
    std::memset(host, 0, slot.count * sizeof(float));
  }
  direct_[b] = 1;
  return out;
}

void Stage2::fill(size_t b, uint64_t first, uint64_t count, float* out) {
  const size_t esize = sdk::dtype_size(dtype_);
  fill_range(layout_, b, first, count, out,
             [&](const BucketSlot& slot, uint64_t param_offset, float* dst, uint64_t n) {
               void* host = params_[slot.param_index].grad;
               const void* source = host != nullptr ? host : lent_.source(slot.param_index);
               if (source == nullptr) {
                 std::fill(dst, dst + n, 0.0f);
                 return;
               }
               caster_.convert(element_at(source, dtype_, param_offset), dtype_, dst, STRATA_F32,
                               n);
               // The host starts the next micro-batch from zero (only what was read is zeroed).
               if (host != nullptr) {
                 std::memset(element_at(host, dtype_, param_offset), 0, n * esize);
               }
             });
}

void Stage2::sent(size_t b) {
  if (!direct_[b]) lent_.consumed(b);
}

void Stage2::deliver(size_t b, uint64_t offset, uint64_t count, const float* values) {
  const BucketPartition& part = layout_.bucket(b);
  caster_.add_into(partition_at(part.offset + offset), dtype_, values, count);
}

void Stage2::completed(size_t b) {
  if (direct_[b]) {
    direct_[b] = 0;
    lent_.consumed(b);
  }
}

}  // namespace strata::zero
