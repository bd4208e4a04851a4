#include "stage0_buffers.hpp"

#include <cstring>

namespace strata::zero {

Fp32Buckets::Fp32Buckets(const sdk::Host& host, const std::vector<ParamRecord>& params,
                         const BucketPlan& plan)
    : params_(params), plan_(plan), tracer_(host), fusion_(plan.buckets.size()) {
  for (size_t k = 0; k < plan_.buckets.size(); ++k) {
    const Bucket& bucket = plan_.buckets[k];
    if (!bucket.in_place) {
      fusion_[k] = sdk::HostArray<float>(host, bucket.count, STRATA_MEM_COMM_BUFFERS);
    }
  }
}

float* Fp32Buckets::load(size_t k) {
  const Bucket& bucket = plan_.buckets[k];
  if (bucket.in_place) return grad_of(bucket.slots.front().param_index);
  const sdk::TraceScope span(tracer_, "bucket_pack", static_cast<int64_t>(k),
                             bucket.count * sizeof(float));
  float* fused = fusion_[k].data();
  for (const BucketSlot& slot : bucket.slots) {
    std::memcpy(fused + slot.offset, grad_of(slot.param_index), slot.count * sizeof(float));
  }
  return fused;
}

void Fp32Buckets::unload(size_t k) {
  const Bucket& bucket = plan_.buckets[k];
  if (bucket.in_place) return;
  const sdk::TraceScope span(tracer_, "bucket_unpack", static_cast<int64_t>(k),
                             bucket.count * sizeof(float));
  for (const BucketSlot& slot : bucket.slots) {
    std::memcpy(grad_of(slot.param_index), fusion_[k].data() + slot.offset,
                slot.count * sizeof(float));
  }
}

}  // namespace strata::zero
