#include "partition_layout.hpp"

#include <strata/plugin.hpp>

#include <utility>

namespace strata::zero {

uint64_t PartitionLayout::slice_size(uint64_t count, int ranks) {
  const auto n = static_cast<uint64_t>(ranks);
  const uint64_t per_rank = (count + n - 1) / n;
  return (per_rank + kSliceAlignment - 1) / kSliceAlignment * kSliceAlignment;
}

PartitionLayout::PartitionLayout(BucketPlan plan, int ranks, int rank,
                                 const std::vector<bool>& partitioned)
    : plan_(std::move(plan)), ranks_(ranks), rank_(rank) {
  if (ranks < 1 || rank < 0 || rank >= ranks) {
    sdk::fail(STRATA_ERR_INTERNAL, "partition layout: rank " + std::to_string(rank) +
                                       " outside a world of " + std::to_string(ranks));
  }
  buckets_.reserve(plan_.buckets.size());
  for (size_t b = 0; b < plan_.buckets.size(); ++b) {
    BucketPartition part;
    part.count = plan_.buckets[b].count;
    part.slice = slice_size(part.count, ranks);
    part.offset = partition_elements_;
    part.partitioned = b < partitioned.size() && partitioned[b];
    partition_elements_ += part.slice;
    if (part.partitioned) {
      part.param_offset = param_partition_elements_;
      param_partition_elements_ += part.slice;
    }
    max_slice_ = std::max(max_slice_, part.slice);
    buckets_.push_back(part);
  }
}

std::vector<OwnedRange> PartitionLayout::owned_ranges() const {
  std::vector<OwnedRange> ranges;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const uint64_t begin = my_begin(b);
    for_each_piece(b, begin, buckets_[b].slice,
                   [&](const BucketSlot& slot, uint64_t param_offset, uint64_t flat, uint64_t n) {
                     ranges.push_back({slot.param_index, param_offset, n,
                                       buckets_[b].offset + (flat - begin)});
                   });
  }
  return ranges;
}

}  // namespace strata::zero
