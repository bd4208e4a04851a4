// Where each rank's partition lies in each bucket (stages 1-3): flat, padded, aligned slices.
//
// Bucket b of `count` elements is padded to N*S elements, S = ceil(count / N) rounded up to a
// multiple of 16 elements (64 bytes of fp32). Rank r owns the flat range [r*S, (r+1)*S) of every
// bucket, padding included; a parameter may straddle ranks. A rank's partition is the
// concatenation of its slices of all buckets (slice b at `offset`), so one allocation holds its
// fp32 master copy, one its gradient partition. At stage 3 the buckets marked `partitioned` also
// keep the rank's slice of the parameters themselves, concatenated at `param_offset`.
#pragma once

#include "bucket_plan.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace strata::zero {

inline constexpr uint64_t kSliceAlignment = 16;  // elements

struct BucketPartition {
  uint64_t count = 0;         // elements of the bucket, padding excluded
  uint64_t slice = 0;         // S: elements per rank, a multiple of 16, N*S >= count
  uint64_t offset = 0;        // of this bucket's slice within the rank's partition
  bool partitioned = false;   // stage 3: the parameters themselves live only in the slices
  uint64_t param_offset = 0;  // of the slice within the parameter partition (partitioned only)
};

// A range of this rank's partition that holds part of one parameter (what a shard steps).
struct OwnedRange {
  uint32_t param_index;
  uint64_t param_offset;      // first element within the parameter
  uint64_t count;
  uint64_t partition_offset;  // first element within the rank's partition
};

class PartitionLayout {
 public:
  PartitionLayout() = default;
  // `partitioned[b]` marks the buckets whose parameters are partitioned (empty: none).
  PartitionLayout(BucketPlan plan, int ranks, int rank, const std::vector<bool>& partitioned = {});

  static uint64_t slice_size(uint64_t count, int ranks);

  const BucketPlan& plan() const { return plan_; }
  const std::vector<BucketPartition>& buckets() const { return buckets_; }
  const BucketPartition& bucket(size_t b) const { return buckets_[b]; }
  int ranks() const { return ranks_; }
  int rank() const { return rank_; }
  uint64_t partition_elements() const { return partition_elements_; }
  uint64_t param_partition_elements() const { return param_partition_elements_; }
  uint64_t max_slice() const { return max_slice_; }
  // First flat element of this rank's slice of bucket b.
  uint64_t my_begin(size_t b) const { return static_cast<uint64_t>(rank_) * buckets_[b].slice; }

  // Calls fn(slot, param_offset, flat, n) for every part of a parameter inside the flat range
  // [flat, flat + count) of bucket b, in flat order. Padding is skipped.
  template <class Fn>
  void for_each_piece(size_t b, uint64_t flat, uint64_t count, Fn&& fn) const {
    const uint64_t end = flat + count;
    for (const BucketSlot& slot : plan_.buckets[b].slots) {
      const uint64_t lo = std::max(flat, slot.offset);
      const uint64_t hi = std::min(end, slot.offset + slot.count);
      if (lo < hi) fn(slot, lo - slot.offset, lo, hi - lo);
    }
  }

  // This rank's pieces of parameters, bucket by bucket (the shards it steps).
  std::vector<OwnedRange> owned_ranges() const;

 private:
  BucketPlan plan_;
  std::vector<BucketPartition> buckets_;
  int ranks_ = 1;
  int rank_ = 0;
  uint64_t partition_elements_ = 0;
  uint64_t param_partition_elements_ = 0;
  uint64_t max_slice_ = 0;
};

}  // namespace strata::zero
