#include "transient_grads.hpp"

namespace strata::zero {

float* TransientGrads::fp32() {
  if (partition_.data() == nullptr) {
    partition_ = Buffer<float>(host_, layout_->partition_elements(), STRATA_MEM_GRADS);
  }
  return partition_.data();
}

void TransientGrads::fill(size_t b, uint64_t first, uint64_t count, float* out) {
  fill_range(Memory(host_), *layout_, b, first, count, out,
             [&](const BucketSlot& slot, uint64_t param_offset, float* dst, uint64_t n) {
               caster_.convert(element_at((*params_)[slot.param_index].grad, dtype_, param_offset),
                               dtype_, dst, STRATA_F32, n);
             });
}

void TransientGrads::deliver(size_t b, uint64_t offset, uint64_t count, const float* values) {
  caster_.add_into(fp32() + layout_->bucket(b).offset + offset, STRATA_F32, values, count);
}

}  // namespace strata::zero
