#include "agreement.hpp"

#include <cstdint>

namespace strata::zero {

void check_ranks_agree(CommLink& comm, const std::vector<ParamRecord>& params,
                       const std::vector<GroupRecord>& groups, const BucketPlan& plan,
                       size_t persistent) {
  constexpr int64_t kPrime = 2147483647;  // keeps the checksums exact in the f64 comparison
  int64_t total = 0, checksum = 0, membership = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    total += static_cast<int64_t>(params[i].count);
    const auto size_mod = static_cast<int64_t>(params[i].count % uint64_t{kPrime});
    const auto term = size_mod * static_cast<int64_t>(i % 1024 + 1);
    checksum = (checksum + term) % kPrime;
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    for (uint32_t p : groups[g].params) {
      membership = (membership + static_cast<int64_t>((p % 65536 + 1) * (g % 1024 + 1))) % kPrime;
    }
  }
  comm.expect_same_on_all_ranks(
      {static_cast<int64_t>(params.size()), total, checksum,
       static_cast<int64_t>(plan.buckets.size()), static_cast<int64_t>(groups.size()), membership,
       static_cast<int64_t>(persistent),
       static_cast<int64_t>(params.empty() ? int32_t{STRATA_F32} : params.front().dtype)},
      {"the parameter count", "the total element count", "the checksum of parameter sizes",
       "the bucket count", "the group count", "the checksum of group membership",
       "the count of persistent (unpartitioned) parameters", "the model dtype"});
}

}  // namespace strata::zero
