#include "fp32_copies.hpp"

namespace strata::zero {

Fp32Copies::Fp32Copies(const sdk::Host& host, const Caster& caster,
                       const std::vector<ParamRecord>& params, const BucketPlan& plan,
                       int32_t dtype)
    : host_(host), caster_(caster), tracer_(host), params_(params), plan_(plan), dtype_(dtype),
      offset_(params.size(), 0) {
  for (const Bucket& bucket : plan_.buckets) {
    bucket_offset_.push_back(elements_);
    for (const BucketSlot& slot : bucket.slots) offset_[slot.param_index] = elements_ + slot.offset;
    elements_ += bucket.count;
  }
  if (elements_ == 0) return;
  master_ = Buffer<float>(host_, elements_, STRATA_MEM_MASTER);
  for (uint32_t i = 0; i < params_.size(); ++i) {
    caster_.convert(params_[i].data, dtype_, master_of(i), STRATA_F32, params_[i].count);
  }
}

const Buffer<float>& Fp32Copies::grads() {
  if (grads_.data() == nullptr && elements_ > 0) {
    grads_ = Buffer<float>(host_, elements_, STRATA_MEM_GRADS);
  }
  return grads_;
}

float* Fp32Copies::load(size_t k) {
  const sdk::TraceScope span(tracer_, "bucket_pack", static_cast<int64_t>(k),
                             plan_.buckets[k].count * sizeof(float));
  float* bucket = grads().data() + bucket_offset_[k];
  for (const BucketSlot& slot : plan_.buckets[k].slots) {
    caster_.convert(params_[slot.param_index].grad, dtype_, bucket + slot.offset, STRATA_F32,
                    slot.count);
  }
  return bucket;
}

}  // namespace strata::zero
