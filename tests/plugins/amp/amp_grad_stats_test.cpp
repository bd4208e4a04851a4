// strata_amp grad_stats: exact sums of squares on small integers, and the non-finite flag for an
// inf or nan wherever it sits (vector body or scalar tail, first or last shard).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "optim_harness.hpp"

namespace strata::test {
namespace {

class AmpGradStats : public ::testing::Test {
 protected:
  strata_grad_stats stats(const ShardSet& shards) {
    strata_grad_stats s{};
    s.struct_size = sizeof(s);
    s.nonfinite = -1;
    s.sum_sq = -1.0;
    strata_error err = sdk::make_error();
    EXPECT_EQ(amp_.ops().grad_stats(amp_.self(), shards.data(), shards.size(), &s, &err), STRATA_OK)
        << err.message;
    return s;
  }

  FakeHost host_;
  Instance<strata_precision_ops> amp_{amp_ops(), host_, "{}"};
  ShardSet shards_{{1, 9, 17, 1000, 3, 64}};
};

TEST_F(AmpGradStats, SumOfSquaresIsExactOnSmallIntegers) {
  ASSERT_EQ(amp_.status(), STRATA_OK) << amp_.message();
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-1000, 1000);
  int64_t expected = 0;
  for (size_t s = 0; s < shards_.size(); ++s) {
    for (float& g : shards_.grad(s)) {
      const int v = small(rng);
      g = static_cast<float>(v);
      expected += int64_t{v} * v;
    }
  }
  const strata_grad_stats s = stats(shards_);
  EXPECT_EQ(s.nonfinite, 0);
  EXPECT_EQ(s.sum_sq, static_cast<double>(expected));
}

TEST_F(AmpGradStats, LargeFiniteValuesAreNotReportedAsOverflow) {
  shards_.grad(3).assign(shards_.grad(3).size(), FLT_MAX);
  const strata_grad_stats s = stats(shards_);
  EXPECT_EQ(s.nonfinite, 0);
  EXPECT_TRUE(std::isfinite(s.sum_sq));
  EXPECT_GT(s.sum_sq, 1e79);
}

TEST_F(AmpGradStats, EveryNonFiniteValueAnywhereIsFlagged) {
  const float specials[] = {
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()};
  for (float special : specials) {
    for (size_t s = 0; s < shards_.size(); ++s) {
      // First element, one inside the vector body, and the last (scalar tail).
      for (size_t at : {size_t{0}, shards_.grad(s).size() / 2, shards_.grad(s).size() - 1}) {
        for (size_t k = 0; k < shards_.size(); ++k) {
          shards_.grad(k).assign(shards_.grad(k).size(), 0.5f);
        }
        shards_.grad(s)[at] = special;
        EXPECT_EQ(stats(shards_).nonfinite, 1) << special << " in shard " << s << " at " << at;
      }
    }
  }
  for (size_t k = 0; k < shards_.size(); ++k) shards_.grad(k).assign(shards_.grad(k).size(), 0.5f);
  const strata_grad_stats clean = stats(shards_);
  EXPECT_EQ(clean.nonfinite, 0);
  EXPECT_EQ(clean.sum_sq, 0.25 * static_cast<double>(shards_.elements()));
}

// Above a million elements the pass is split over threads; small integers keep every partial sum
// exact, so the total must equal the integer sum whatever the split.
TEST_F(AmpGradStats, ThreadedSumIsExactOnSmallIntegers) {
  for (unsigned threads : {1u, 3u}) {
    Instance<strata_precision_ops> amp(amp_ops(), host_,
                                       R"({"threads": )" + std::to_string(threads) + "}");
    ASSERT_EQ(amp.status(), STRATA_OK) << amp.message();
    ShardSet big({(uint64_t{5} << 20) + 77, 3});
    int64_t expected = 0;
    for (size_t s = 0; s < big.size(); ++s) {
      std::vector<float>& g = big.grad(s);
      for (size_t i = 0; i < g.size(); ++i) {
        const int v = static_cast<int>((i * 2654435761u) % 2001) - 1000;
        g[i] = static_cast<float>(v);
        expected += int64_t{v} * v;
      }
    }
    strata_grad_stats st{};
    st.struct_size = sizeof st;
    strata_error err = sdk::make_error();
    ASSERT_EQ(amp.ops().grad_stats(amp.self(), big.data(), big.size(), &st, &err), STRATA_OK)
        << err.message;
    EXPECT_EQ(st.nonfinite, 0);
    EXPECT_EQ(st.sum_sq, static_cast<double>(expected)) << "threads " << threads;
  }
}

TEST_F(AmpGradStats, NoShardsGiveZero) {
  ShardSet none(std::vector<uint64_t>{});
  const strata_grad_stats s = stats(none);
  EXPECT_EQ(s.nonfinite, 0);
  EXPECT_EQ(s.sum_sq, 0.0);
}

TEST_F(AmpGradStats, NullArgumentsFail) {
  strata_error err = sdk::make_error();
  EXPECT_EQ(amp_.ops().grad_stats(amp_.self(), shards_.data(), shards_.size(), nullptr, &err),
            STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("stats"), std::string::npos) << err.message;
  strata_grad_stats s{};
  s.struct_size = sizeof(s);
  EXPECT_EQ(amp_.ops().grad_stats(amp_.self(), nullptr, 3, &s, &err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("shards"), std::string::npos) << err.message;
}

}  // namespace
}  // namespace strata::test
