#include "bucket_plan.hpp"

#include <cstddef>

namespace strata::zero {

BucketPlan plan_buckets(const std::vector<uint64_t>& counts, uint64_t capacity,
                        const std::vector<uint64_t>& keys) {
  BucketPlan plan;
  plan.bucket_of.assign(counts.size(), kNoBucket);
  Bucket open;  // the fused bucket being filled

  auto close_open = [&] {
    if (open.slots.empty()) return;
    // A bucket of one parameter has nothing to fuse: reduce it in place, like an oversized one.
    open.in_place = open.slots.size() == 1;
    if (!open.in_place) plan.fused_elements += open.count;
    plan.buckets.push_back(std::move(open));
    open = Bucket{};
  };

  for (size_t i = counts.size(); i-- > 0;) {
    const uint64_t count = counts[i];
    const uint64_t key = keys.empty() ? 0 : keys[i];
    const auto index = static_cast<uint32_t>(i);
    if (count == 0) continue;
    if (count > capacity) {
      // Keep bucket order = order in which gradients appear: what was filling goes first.
      close_open();
      Bucket own;
      own.slots.push_back({index, 0, count});
      own.count = count;
      own.in_place = true;
      own.key = key;
      plan.bucket_of[i] = static_cast<uint32_t>(plan.buckets.size());
      plan.buckets.push_back(std::move(own));
      continue;
    }
    if (!open.slots.empty() && (open.count + count > capacity || open.key != key)) close_open();
    open.key = key;
    open.slots.push_back({index, open.count, count});
    open.count += count;
    plan.bucket_of[i] = static_cast<uint32_t>(plan.buckets.size());
  }
  close_open();
  return plan;
}

}  // namespace strata::zero
