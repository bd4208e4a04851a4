// Stages 1-3 with f16 and bf16 models: casts go through the precision stratum (the real
// strata_amp), gradients are averaged and kept in fp32 (the stage 2-3 gradient partition too, as
// stage 0 keeps them), the stage 3 parameter partition holds the model dtype. Values are small integers, exact in both half dtypes,
// so results compare exactly. (Stage 0: zero_stage0_half_test.cpp.)
#include "amp_support.hpp"
#include "sharded_support.hpp"

#include <tuple>

namespace strata::zero_test {
namespace {

const std::vector<uint64_t> kDtypeSizes = {7, 300, 33};

// (stage, model dtype)
class HalfStage : public ::testing::TestWithParam<std::tuple<int, int32_t>> {
 protected:
  void SetUp() override {
    precision_.serve(host_);
    ASSERT_EQ(zero_.created(), STRATA_OK) << zero_.message();
    for (uint32_t p = 0; p < kDtypeSizes.size(); ++p) {
      data_.emplace_back(kDtypeSizes[p]);
      grads_.emplace_back(kDtypeSizes[p], 0);
      for (size_t i = 0; i < kDtypeSizes[p]; ++i) data_[p][i] = to_half(initial(p, i), dtype_);
      names_.push_back("w" + std::to_string(p));
      ASSERT_EQ(zero_.register_param(p, names_[p].c_str(), data_[p].data(), grads_[p].data(),
                                     kDtypeSizes[p], dtype_),
                STRATA_OK) << zero_.message();
    }
    // One group holding everything; at stage 3 only w1 (300 > 100) is partitioned.
    ASSERT_EQ(zero_.define_group(0, "all", {0, 1, 2}), STRATA_OK) << zero_.message();
    ASSERT_EQ(zero_.finalize(), STRATA_OK) << zero_.message();
  }
  static float initial(size_t p, size_t i) { return static_cast<float>((p * 13 + i) % 64); }

  const int stage_ = std::get<0>(GetParam());
  const int32_t dtype_ = std::get<1>(GetParam());
  const int rank_ = CommEnvironment::rank();
  const int size_ = CommEnvironment::size();
  AmpPrecision precision_{dtype_};
  RecordingHost host_;
  Zero zero_{host_, stage_config(stage_, R"("stage3_param_persistence_threshold": 100)")};
  std::vector<std::vector<uint16_t>> data_, grads_;
  std::vector<std::string> names_;
};

TEST_P(HalfStage, ReducesInFp32AndPublishesTheModelDtype) {
  for (int micro = 0; micro < 2; ++micro) {
    ASSERT_EQ(zero_.gather(0, true), STRATA_OK) << zero_.message();
    for (uint32_t p = 0; p < kDtypeSizes.size(); ++p) {
      std::vector<float> g(kDtypeSizes[p]);
      for (size_t i = 0; i < kDtypeSizes[p]; ++i) g[i] = from_half(grads_[p][i], dtype_);
      TestModel::add_contribution(g.data(), p, kDtypeSizes[p], micro, rank_, size_);
      for (size_t i = 0; i < kDtypeSizes[p]; ++i) grads_[p][i] = to_half(g[i], dtype_);
      ASSERT_EQ(zero_.grad_ready(p, micro == 1), STRATA_OK) << zero_.message();
    }
    ASSERT_EQ(zero_.release(0), STRATA_OK) << zero_.message();
    ASSERT_EQ(zero_.end_micro_step(micro == 1), STRATA_OK) << zero_.message();
  }
  ASSERT_EQ(zero_.finish_reduce(), STRATA_OK) << zero_.message();
  const strata_shard* shards = nullptr;
  size_t count = 0;
  ASSERT_EQ(zero_.owned_shards(&shards, &count), STRATA_OK) << zero_.message();
  std::string first;
  EXPECT_EQ(wrong_shard_grads(shards, count, {0, 1}, &first), 0u) << first;
  for (size_t k = 0; k < count; ++k) {
    for (uint64_t j = 0; j < shards[k].count; ++j) {
      ASSERT_EQ(shards[k].master[j], initial(shards[k].param_index, shards[k].offset + j));
      shards[k].master[j] += 1.0f;
    }
  }
  // As the runtime does: every shard names its model copy, and the step (the offload plugin in
  // its pass, or the runtime) writes it before publish; the plugin never rounds masters itself.
  // The copies lie in the parameters' own `data` (publish allgathers them from there), or for
  // stage 3's partitioned parameter (w1: 300 elements, over the threshold of 100) in the
  // parameter partition.
  size_t lent = 0;
  for (size_t k = 0; k < count; ++k) {
    if (shards[k].model == nullptr) continue;
    ++lent;
    EXPECT_EQ(shards[k].model_dtype, dtype_);
    auto* copy = static_cast<uint16_t*>(shards[k].model);
    for (uint64_t j = 0; j < shards[k].count; ++j) copy[j] = to_half(shards[k].master[j], dtype_);
  }
  EXPECT_EQ(lent, count) << "every shard asks for its model copy";
  ASSERT_EQ(zero_.publish(), STRATA_OK) << zero_.message();
  ASSERT_EQ(zero_.zero_grad(), STRATA_OK) << zero_.message();
  ASSERT_EQ(zero_.gather(0), STRATA_OK) << zero_.message();
  size_t wrong = 0;
  for (uint32_t p = 0; p < kDtypeSizes.size(); ++p) {
    strata_param_view view{};
    ASSERT_EQ(zero_.param_view(p, &view), STRATA_OK) << zero_.message();
    EXPECT_EQ(view.dtype, dtype_);
    const auto* w = static_cast<const uint16_t*>(view.data);
    ASSERT_NE(w, nullptr);
    for (size_t i = 0; i < kDtypeSizes[p]; ++i) {
      wrong += from_half(w[i], dtype_) != initial(p, i) + 1.0f ? 1 : 0;
    }
  }
  EXPECT_EQ(wrong, 0u);
  ASSERT_EQ(zero_.release(0), STRATA_OK) << zero_.message();
}

// Issue 30, item 4: the average reaches the optimizer in fp32, never rounded to the model dtype
// (stage 0 does not round it either). Rank r's gradient is 1 + r·u (u = the dtype's ulp at 1,
// 2^-10 for f16, 2^-7 for bf16; exact in the dtype), so the average 1 + (N-1)·u/2 falls between
// two half values for every even N: a model-dtype partition would round it away. One micro-batch,
// as the only one of the step: the shards hold the comm plugin's fp32 average itself.
TEST_P(HalfStage, AveragesStayFp32) {
  const float ulp = dtype_ == STRATA_F16 ? 0x1p-10f : 0x1p-7f;
  ASSERT_EQ(zero_.gather(0, true), STRATA_OK) << zero_.message();
  for (uint32_t p = 0; p < kDtypeSizes.size(); ++p) {
    for (size_t i = 0; i < kDtypeSizes[p]; ++i) {
      grads_[p][i] = to_half(1.0f + static_cast<float>(rank_) * ulp, dtype_);
    }
    ASSERT_EQ(zero_.grad_ready(p, true), STRATA_OK) << zero_.message();
  }
  ASSERT_EQ(zero_.release(0), STRATA_OK) << zero_.message();
  ASSERT_EQ(zero_.end_micro_step(true), STRATA_OK) << zero_.message();
  ASSERT_EQ(zero_.finish_reduce(), STRATA_OK) << zero_.message();
  const strata_shard* shards = nullptr;
  size_t count = 0;
  ASSERT_EQ(zero_.owned_shards(&shards, &count), STRATA_OK) << zero_.message();
  float sum = 0.0f;  // the fp32 sum over ranks, in rank order, then divided as AVG does
  for (int r = 0; r < size_; ++r) sum += 1.0f + static_cast<float>(r) * ulp;
  const float expected = sum / static_cast<float>(size_);
  size_t wrong = 0;
  for (size_t k = 0; k < count; ++k) {
    for (uint64_t j = 0; j < shards[k].count; ++j) wrong += shards[k].grad[j] != expected ? 1 : 0;
  }
  EXPECT_EQ(wrong, 0u) << "expected " << expected << " in every shard element";
  ASSERT_EQ(zero_.zero_grad(), STRATA_OK) << zero_.message();
}

TEST_P(HalfStage, PartitionsHoldTheModelDtype) {
  // Buckets (reduce_bucket_size 256, reverse order): [w2] 33, [w1] 300 (oversized, which also
  // closes w2's bucket), [w0] 7.
  const uint64_t partition = expected_partition({33, 300, 7}, size_);
  EXPECT_EQ(host_.bytes(STRATA_MEM_MASTER), partition * sizeof(float));
  // Stages 2-3 accumulate a half model's gradients in fp32 (as stage 0 averages them), in a
  // partition that exists only from the step's first reduction to zero_grad, like stage 1's.
  EXPECT_EQ(host_.bytes(STRATA_MEM_GRADS), 0u);
  EXPECT_EQ(host_.bytes(STRATA_MEM_PARAMS), stage_ == 3 ? expected_slice(300, size_) * 2 : 0u);
}

INSTANTIATE_TEST_SUITE_P(Stages, HalfStage,
                         ::testing::Combine(::testing::Values(1, 2, 3),
                                            ::testing::Values(STRATA_BF16, STRATA_F16)),
                         [](const auto& info) {
                           return "stage" + std::to_string(std::get<0>(info.param)) + "_" +
                                  dtype_label(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace strata::zero_test
