#include "full_grads.hpp"

#include <algorithm>
#include <cstring>

namespace strata::zero {

FullGrads::FullGrads(const sdk::Host& host, std::vector<ParamRecord>& params,
                     const BucketPlan* plan) {
  if (plan != nullptr) {
    arenas_.assign(plan->buckets.size(), nullptr);
    for (size_t k = 0; k < plan->buckets.size(); ++k) {
      const Bucket& bucket = plan->buckets[k];
      const bool ours = std::all_of(bucket.slots.begin(), bucket.slots.end(), [&](const BucketSlot& s) {
        return params[s.param_index].grad == nullptr && params[s.param_index].dtype == STRATA_F32;
      });
      if (bucket.in_place || !ours) continue;
      owned_.emplace_back(host, bucket.count * sizeof(float), STRATA_MEM_GRADS);
      arenas_[k] = reinterpret_cast<float*>(owned_.back().data());
      for (const BucketSlot& s : bucket.slots) params[s.param_index].grad = arenas_[k] + s.offset;
    }
  }
  for (ParamRecord& p : params) {
    if (p.grad != nullptr || p.count == 0) continue;
    owned_.emplace_back(host, p.count * sdk::dtype_size(p.dtype), STRATA_MEM_GRADS);
    p.grad = owned_.back().data();
  }
}

void FullGrads::zero(const std::vector<ParamRecord>& params, const Memory& memory) {
  for (const ParamRecord& p : params) {
    if (p.count > 0 && p.grad != nullptr)
      memory.zero(p.grad, p.count * sdk::dtype_size(p.dtype));
  }
}

}  // namespace strata::zero
