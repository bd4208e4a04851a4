#include "stage0_buffers.hpp"

#include <cstring>

namespace strata::zero {

Fp32Buckets::Fp32Buckets(const sdk::Host& host, const std::vector<ParamRecord>& params,
                         const BucketPlan& plan, const FullGrads& grads)
    : params_(params), plan_(plan), grads_(grads), tracer_(host), memory_(host),
      fusion_(plan.buckets.size()) {
  for (size_t k = 0; k < plan_.buckets.size(); ++k) {
    if (where_it_lies(k) == nullptr) {
      fusion_[k] = Buffer<float>(host, plan_.buckets[k].count, STRATA_MEM_COMM_BUFFERS);
    }
  }
}

float* Fp32Buckets::where_it_lies(size_t k) const {
  const Bucket& bucket = plan_.buckets[k];
  if (bucket.in_place) return grad_of(bucket.slots.front().param_index);
  return grads_.bucket_arena(k);
}

size_t Fp32Buckets::reduced_where_they_lie() const {
  size_t n = 0;
  for (size_t k = 0; k < plan_.buckets.size(); ++k) n += where_it_lies(k) != nullptr ? 1 : 0;
  return n;
}

uint64_t Fp32Buckets::fused_elements() const {
  uint64_t n = 0;
  for (const Buffer<float>& f : fusion_) n += f.size();
  return n;
}

float* Fp32Buckets::load(size_t k) {
  const Bucket& bucket = plan_.buckets[k];
  if (float* here = where_it_lies(k)) return here;
  const sdk::TraceScope span(tracer_, "bucket_pack", static_cast<int64_t>(k),
                             bucket.count * sizeof(float));
  float* fused = fusion_[k].data();
  for (const BucketSlot& slot : bucket.slots) {
    memory_.copy(fused + slot.offset, grad_of(slot.param_index), slot.count * sizeof(float));
  }
  return fused;
}

void Fp32Buckets::unload(size_t k) {
  const Bucket& bucket = plan_.buckets[k];
  if (where_it_lies(k) != nullptr) return;
  const sdk::TraceScope span(tracer_, "bucket_unpack", static_cast<int64_t>(k),
                             bucket.count * sizeof(float));
  for (const BucketSlot& slot : bucket.slots) {
    memory_.copy(grad_of(slot.param_index), fusion_[k].data() + slot.offset,
                slot.count * sizeof(float));
  }
}

}  // namespace strata::zero
