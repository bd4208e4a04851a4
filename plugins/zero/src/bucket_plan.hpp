// Which parameters' gradients are reduced together, and where each sits in its fusion buffer.
#pragma once

#include <cstdint>
#include <vector>

namespace strata::zero {

struct BucketSlot {
  uint32_t param_index;
  uint64_t offset;  // first element within the bucket's fusion buffer
  uint64_t count;
};

struct Bucket {
  std::vector<BucketSlot> slots;  // in reverse registration order
  uint64_t count = 0;             // elements in the bucket
  // A bucket of a single parameter (always the case for one larger than the capacity) is reduced
  // where it lies, in the host's gradient buffer: copying it into a fusion buffer would cost
  // memory and bandwidth and save no latency.
  bool in_place = false;
};

struct BucketPlan {
  std::vector<Bucket> buckets;
  std::vector<uint32_t> bucket_of;  // per parameter; kNoBucket for empty parameters
  uint64_t fused_elements = 0;      // total size of the fusion buffers the plan needs
};

inline constexpr uint32_t kNoBucket = UINT32_MAX;

// Groups parameters (given by element count, in registration order) into buckets of at most
// `capacity` elements. Walks them in REVERSE registration order, because backward produces the
// last layers' gradients first: the first bucket then fills (and can be reduced) earliest.
// Consecutive parameters share a bucket while its total stays <= capacity; a parameter with more
// than `capacity` elements gets a bucket of its own. Buckets of one parameter are in place.
// Empty parameters join no bucket.
BucketPlan plan_buckets(const std::vector<uint64_t>& counts, uint64_t capacity);

}  // namespace strata::zero
