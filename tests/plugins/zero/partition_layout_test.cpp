// The partition layout on its own (a pure function; compiled from the plugin's source).
#include "partition_layout.hpp"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace strata::zero {
namespace {

const std::vector<uint64_t> kSizes = {7, 300, 1, 1000, 0, 33, 129, 250, 5};

TEST(PartitionLayout, SlicesArePaddedToSixteenElementMultiples) {
  EXPECT_EQ(PartitionLayout::slice_size(1, 1), 16u);
  EXPECT_EQ(PartitionLayout::slice_size(16, 1), 16u);
  EXPECT_EQ(PartitionLayout::slice_size(17, 1), 32u);
  EXPECT_EQ(PartitionLayout::slice_size(1000, 3), 336u) << "ceil(1000 / 3) = 334 -> 336";
  EXPECT_EQ(PartitionLayout::slice_size(255, 4), 64u);
  EXPECT_EQ(PartitionLayout::slice_size(64, 4), 16u);
}

TEST(PartitionLayout, EveryElementIsOwnedByExactlyOneRank) {
  for (int ranks = 1; ranks <= 5; ++ranks) {
    std::map<std::pair<uint32_t, uint64_t>, int> owners;
    for (int rank = 0; rank < ranks; ++rank) {
      const PartitionLayout layout(plan_buckets(kSizes, 256), ranks, rank);
      std::vector<uint8_t> used(layout.partition_elements(), 0);
      for (const OwnedRange& r : layout.owned_ranges()) {
        ASSERT_LE(r.param_offset + r.count, kSizes[r.param_index]);
        ASSERT_LE(r.partition_offset + r.count, layout.partition_elements());
        for (uint64_t j = 0; j < r.count; ++j) {
          ++owners[{r.param_index, r.param_offset + j}];
          EXPECT_EQ(used[r.partition_offset + j]++, 0) << "partition element used twice";
        }
      }
    }
    uint64_t total = 0;
    for (uint64_t n : kSizes) total += n;
    EXPECT_EQ(owners.size(), total) << ranks << " ranks";
    for (const auto& [element, count] : owners) {
      EXPECT_EQ(count, 1) << "param " << element.first << " element " << element.second;
    }
  }
}

TEST(PartitionLayout, SlicesConcatenateInBucketOrder) {
  const PartitionLayout layout(plan_buckets(kSizes, 256), 3, 2);
  // Buckets: 255, 162, 1000, 1, 300, 7 elements -> slices 96, 64, 336, 16, 112, 16.
  const std::vector<uint64_t> slices = {96, 64, 336, 16, 112, 16};
  ASSERT_EQ(layout.buckets().size(), slices.size());
  uint64_t offset = 0;
  for (size_t b = 0; b < slices.size(); ++b) {
    EXPECT_EQ(layout.bucket(b).slice, slices[b]) << "bucket " << b;
    EXPECT_EQ(layout.bucket(b).offset, offset) << "bucket " << b;
    offset += slices[b];
  }
  EXPECT_EQ(layout.partition_elements(), offset);
  EXPECT_EQ(layout.max_slice(), 336u);
  EXPECT_EQ(layout.my_begin(0), 192u);
  EXPECT_EQ(layout.param_partition_elements(), 0u);
}

TEST(PartitionLayout, RankTwoOfThreeOwnsTheTailOfTheFirstBucketAndNoPadding) {
  const PartitionLayout layout(plan_buckets(kSizes, 256), 3, 2);
  // Bucket 0 holds param 8 (5 elements, flat 0-4) then param 7 (250, flat 5-254). Rank 2 owns
  // flat [192, 288): param 7 elements 187-249; flat 255-287 is padding.
  const OwnedRange first = layout.owned_ranges().front();
  EXPECT_EQ(first.param_index, 7u);
  EXPECT_EQ(first.param_offset, 187u);
  EXPECT_EQ(first.count, 63u);
  EXPECT_EQ(first.partition_offset, 0u);
}

TEST(PartitionLayout, PartitionedBucketsGetParameterSlices) {
  const PartitionLayout layout(plan_buckets({40, 40, 40}, 50), 2, 1, {true, false, true});
  EXPECT_EQ(layout.bucket(0).param_offset, 0u);
  EXPECT_EQ(layout.bucket(2).param_offset, 32u);
  EXPECT_EQ(layout.param_partition_elements(), 64u);
  EXPECT_EQ(layout.partition_elements(), 96u);
}

TEST(PartitionLayout, PiecesSkipPadding) {
  const PartitionLayout layout(plan_buckets({3, 2}, 8), 2, 0);  // one bucket: [p1 (2), p0 (3)]
  std::vector<std::vector<uint64_t>> pieces;
  layout.for_each_piece(0, 1, 31, [&](const BucketSlot& s, uint64_t param_offset, uint64_t flat,
                                      uint64_t n) {
    pieces.push_back({s.param_index, param_offset, flat, n});
  });
  EXPECT_EQ(pieces, (std::vector<std::vector<uint64_t>>{{1, 1, 1, 1}, {0, 0, 2, 3}}));
}

TEST(BucketPlanKeys, BucketsNeverMixKeys) {
  const BucketPlan plan = plan_buckets({4, 4, 4, 4, 4}, 100, {1, 1, 2, 2, 2});
  ASSERT_EQ(plan.buckets.size(), 2u);
  EXPECT_EQ(plan.buckets[0].slots.size(), 3u);
  EXPECT_EQ(plan.buckets[0].key, 2u);
  EXPECT_EQ(plan.buckets[1].slots.size(), 2u);
  EXPECT_EQ(plan.buckets[1].key, 1u);
  EXPECT_EQ(plan.bucket_of, (std::vector<uint32_t>{1, 1, 0, 0, 0}));
}

}  // namespace
}  // namespace strata::zero
