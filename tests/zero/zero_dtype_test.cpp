// Stages 1-3 with a bf16 model: casts go through the precision stratum (the real strata_amp),
// gradients are averaged in fp32, the stage 2-3 gradient partition and the stage 3 parameter
// partition hold bf16. Values are small integers, exact in bf16, so results compare exactly.
#include "sharded_support.hpp"

#include <cstring>

namespace strata::zero_test {
namespace {

uint16_t to_bf16(float f) {  // exact for the values used here (low 16 bits are zero)
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}
float from_bf16(uint16_t h) {
  const uint32_t bits = uint32_t{h} << 16;
  float f = 0.0f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// The amp plugin as a bf16 precision stratum, created once per test.
class Bf16Precision {
 public:
  Bf16Precision() {
    strata_error err = sdk::make_error();
    if (ops().create(R"({"dtype": "bf16"})", host_.api(), &self_, &err) != STRATA_OK) {
      throw std::runtime_error(std::string("amp create: ") + err.message);
    }
  }
  ~Bf16Precision() { ops().destroy(self_); }
  static const strata_precision_ops& ops() {
    static test::PluginLibrary library(STRATA_TEST_AMP_PLUGIN);
    return library.ops<strata_precision_ops>();
  }
  void* self() const { return self_; }

 private:
  test::FakeHost host_;
  void* self_ = nullptr;
};

const std::vector<uint64_t> kSizes = {7, 300, 33};

class Bf16Stage : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    host_.api()->precision = &Bf16Precision::ops();
    host_.api()->precision_self = precision_.self();
    ASSERT_EQ(zero_.created(), STRATA_OK) << zero_.message();
    for (uint32_t p = 0; p < kSizes.size(); ++p) {
      data_.emplace_back(kSizes[p]);
      grads_.emplace_back(kSizes[p], 0);
      for (size_t i = 0; i < kSizes[p]; ++i) data_[p][i] = to_bf16(initial(p, i));
      names_.push_back("w" + std::to_string(p));
      ASSERT_EQ(zero_.register_param(p, names_[p].c_str(), data_[p].data(), grads_[p].data(),
                                     kSizes[p], STRATA_BF16),
                STRATA_OK) << zero_.message();
    }
    // One group holding everything; at stage 3 only w1 (300 > 100) is partitioned.
    ASSERT_EQ(zero_.define_group(0, "all", {0, 1, 2}), STRATA_OK) << zero_.message();
    ASSERT_EQ(zero_.finalize(), STRATA_OK) << zero_.message();
  }
  static float initial(size_t p, size_t i) { return static_cast<float>((p * 13 + i) % 64); }

  const int rank_ = CommEnvironment::rank();
  const int size_ = CommEnvironment::size();
  Bf16Precision precision_;
  RecordingHost host_;
  Zero zero_{host_, stage_config(GetParam(), R"("stage3_param_persistence_threshold": 100)")};
  std::vector<std::vector<uint16_t>> data_, grads_;
  std::vector<std::string> names_;
};

TEST_P(Bf16Stage, ReducesInFp32AndPublishesBf16) {
  for (int micro = 0; micro < 2; ++micro) {
    ASSERT_EQ(zero_.gather(0, true), STRATA_OK) << zero_.message();
    for (uint32_t p = 0; p < kSizes.size(); ++p) {
      std::vector<float> g(kSizes[p]);
      for (size_t i = 0; i < kSizes[p]; ++i) g[i] = from_bf16(grads_[p][i]);
      TestModel::add_contribution(g.data(), p, kSizes[p], micro, rank_, size_);
      for (size_t i = 0; i < kSizes[p]; ++i) grads_[p][i] = to_bf16(g[i]);
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
  ASSERT_EQ(zero_.publish(), STRATA_OK) << zero_.message();
  ASSERT_EQ(zero_.zero_grad(), STRATA_OK) << zero_.message();
  ASSERT_EQ(zero_.gather(0), STRATA_OK) << zero_.message();
  size_t wrong = 0;
  for (uint32_t p = 0; p < kSizes.size(); ++p) {
    strata_param_view view{};
    ASSERT_EQ(zero_.param_view(p, &view), STRATA_OK) << zero_.message();
    EXPECT_EQ(view.dtype, STRATA_BF16);
    const auto* w = static_cast<const uint16_t*>(view.data);
    ASSERT_NE(w, nullptr);
    for (size_t i = 0; i < kSizes[p]; ++i) wrong += from_bf16(w[i]) != initial(p, i) + 1.0f ? 1 : 0;
  }
  EXPECT_EQ(wrong, 0u);
  ASSERT_EQ(zero_.release(0), STRATA_OK) << zero_.message();
}

TEST_P(Bf16Stage, PartitionsHoldTheModelDtype) {
  // Buckets (reduce_bucket_size 256, reverse order): [w2] 33, [w1] 300 (oversized, which also
  // closes w2's bucket), [w0] 7.
  const uint64_t partition = expected_partition({33, 300, 7}, size_);
  EXPECT_EQ(host_.bytes(STRATA_MEM_MASTER), partition * sizeof(float));
  EXPECT_EQ(host_.bytes(STRATA_MEM_GRADS), GetParam() >= 2 ? partition * 2 : 0u);
  EXPECT_EQ(host_.bytes(STRATA_MEM_PARAMS), GetParam() == 3 ? expected_slice(300, size_) * 2 : 0u);
}

INSTANTIATE_TEST_SUITE_P(Stages, Bf16Stage, ::testing::Values(1, 2, 3),
                         [](const auto& info) { return "stage" + std::to_string(info.param); });

}  // namespace
}  // namespace strata::zero_test
