// The bucket plan on its own (a pure function; compiled from the plugin's source).
#include "bucket_plan.hpp"

#include <gtest/gtest.h>

namespace strata::zero {
namespace {

std::vector<std::vector<uint32_t>> members(const BucketPlan& plan) {
  std::vector<std::vector<uint32_t>> out;
  for (const Bucket& b : plan.buckets) {
    out.emplace_back();
    for (const BucketSlot& s : b.slots) out.back().push_back(s.param_index);
  }
  return out;
}

TEST(BucketPlan, FillsInReverseRegistrationOrderUpToTheCapacity) {
  const BucketPlan plan = plan_buckets({4, 4, 4, 4, 4}, 8);
  EXPECT_EQ(members(plan), (std::vector<std::vector<uint32_t>>{{4, 3}, {2, 1}, {0}}));
  EXPECT_EQ(plan.fused_elements, 16u) << "the lone last parameter needs no fusion buffer";
  EXPECT_TRUE(plan.buckets[2].in_place);
  EXPECT_EQ(plan.bucket_of, (std::vector<uint32_t>{2, 1, 1, 0, 0}));
  // Slots are packed back to back in the fusion buffer.
  EXPECT_EQ(plan.buckets[0].slots[1].offset, 4u);
}

TEST(BucketPlan, ABucketMayBeExactlyFull) {
  const BucketPlan plan = plan_buckets({3, 5, 8}, 8);
  EXPECT_EQ(members(plan), (std::vector<std::vector<uint32_t>>{{2}, {1, 0}}));
  EXPECT_EQ(plan.buckets[0].count, 8u) << "a parameter equal to the capacity still fits";
  EXPECT_TRUE(plan.buckets[0].in_place) << "alone in its bucket: nothing to fuse";
  EXPECT_FALSE(plan.buckets[1].in_place);
}

TEST(BucketPlan, OversizedParametersAreReducedInPlaceAlone) {
  const BucketPlan plan = plan_buckets({2, 100, 3, 1}, 8);
  EXPECT_EQ(members(plan), (std::vector<std::vector<uint32_t>>{{3, 2}, {1}, {0}}));
  EXPECT_TRUE(plan.buckets[1].in_place);
  EXPECT_EQ(plan.buckets[1].count, 100u);
  EXPECT_EQ(plan.fused_elements, 4u) << "in-place buckets need no fusion buffer";
}

TEST(BucketPlan, EmptyParametersJoinNoBucket) {
  const BucketPlan plan = plan_buckets({0, 4, 0}, 8);
  EXPECT_EQ(members(plan), (std::vector<std::vector<uint32_t>>{{1}}));
  EXPECT_EQ(plan.bucket_of[0], kNoBucket);
  EXPECT_EQ(plan.bucket_of[2], kNoBucket);
  EXPECT_TRUE(plan_buckets({}, 8).buckets.empty());
}

}  // namespace
}  // namespace strata::zero
