// Which parameters' gradients are reduced together, and where each sits in its bucket.
#pragma once

#include <cstdint>
#include <vector>

namespace strata::zero {

struct BucketSlot {
  uint32_t param_index;
  uint64_t offset;  // first element within the bucket's flat layout
  uint64_t count;
};

struct Bucket {
  std::vector<BucketSlot> slots;  // in reverse registration order, contiguous from offset 0
  uint64_t count = 0;             // elements in the bucket
  // A bucket of a single parameter (always the case for one larger than the capacity) is reduced
  // where it lies at stage 0, in the host's gradient buffer: copying it into a fusion buffer would
  // cost memory and bandwidth and save no latency.
  bool in_place = false;
  uint64_t key = 0;  // the key its parameters share (see plan_buckets)
};

struct BucketPlan {
  std::vector<Bucket> buckets;
  std::vector<uint32_t> bucket_of;  // per parameter; kNoBucket for empty parameters
  uint64_t fused_elements = 0;      // total size of the stage-0 fusion buffers the plan needs
};

inline constexpr uint32_t kNoBucket = UINT32_MAX;

// Groups parameters (given by element count, in registration order) into buckets of at most
// `capacity` elements. Walks them in REVERSE registration order, because backward produces the
// last layers' gradients first: the first bucket then fills (and can be reduced) earliest.
// Consecutive parameters share a bucket while its total stays <= capacity and they have the same
// `keys` entry (empty `keys`: all alike); stages 1-3 key parameters by group, so that a released
// group completes whole buckets, and stage 3 also by persistence. A parameter with more than
// `capacity` elements gets a bucket of its own. Buckets of one parameter are in place.
// Empty parameters join no bucket.
BucketPlan plan_buckets(const std::vector<uint64_t>& counts, uint64_t capacity,
                        const std::vector<uint64_t>& keys = {});

}  // namespace strata::zero
