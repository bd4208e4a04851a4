// ZeRO stage 0 with f16 and bf16 models, through the real strata_amp: fp32 masters of every
// parameter, gradients averaged in fp32 (sum in fp32, divided by N), the parameters named as the
// shards' model copies (the step rounds the masters into them), and memory by category equal to
// DeepSpeed's layout (masters 4Ψ; the fp32 gradient copy 4Ψ only from a step's first reduction to
// zero_grad).
#include "amp_support.hpp"
#include "sharded_support.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace strata::zero_test {
namespace {

constexpr const char* kHalfConfig = R"({"stage": 0, "reduce_bucket_size": 256})";
const uint64_t kElements = std::accumulate(kOddSizes.begin(), kOddSizes.end(), uint64_t{0});

// Rank r's gradient: ±k·2^(4r-12) with k in [1, 255]: exact in f16 and bf16 (8 significant
// bits). Any partial sum over up to 4 ranks has its bits within 2^-12..2^9: exact in fp32 in any
// order, but mostly not representable in the half dtypes, so a reduction that rounds to the model
// dtype shows.
float contribution(size_t p, size_t i, int rank, int step) {
  const auto k = 1 + static_cast<int>((p * 31 + i * 7 + static_cast<size_t>(rank) * 13 +
                                       static_cast<size_t>(step) * 5) % 255);
  const float sign = (p + i) % 2 == 0 ? 1.0f : -1.0f;
  return sign * std::ldexp(static_cast<float>(k), 4 * rank - 12);
}
float fp32_average(size_t p, size_t i, int ranks, int step) {
  float sum = 0.0f;  // exact (see contribution)
  for (int r = 0; r < ranks; ++r) sum += contribution(p, i, r, step);
  return sum / static_cast<float>(ranks);  // as the comm stratum's AVG: one fp32 division
}

class Stage0Half : public ::testing::TestWithParam<int32_t> {
 protected:
  void SetUp() override {
    precision_.serve(host_);
    ASSERT_EQ(zero_.created(), STRATA_OK) << zero_.message();
  }
  // Registers kOddSizes (initial values from `initial`) with host gradient buffers, or none.
  void finalize(bool host_grads = true) {
    for (uint32_t p = 0; p < kOddSizes.size(); ++p) {
      names_.push_back("layer" + std::to_string(p));
      data_.emplace_back(kOddSizes[p]);
      grads_.emplace_back(host_grads ? kOddSizes[p] : 0, uint16_t{0});
      for (size_t i = 0; i < kOddSizes[p]; ++i) data_[p][i] = to_half(initial(p, i), dtype_);
      ASSERT_EQ(zero_.register_param(p, names_[p].c_str(), data_[p].data(),
                                     host_grads ? grads_[p].data() : nullptr, kOddSizes[p],
                                     dtype_),
                STRATA_OK) << zero_.message();
    }
    ASSERT_EQ(zero_.finalize(), STRATA_OK) << zero_.message();
  }
  // Signed values whose last bit in the model dtype varies, zero among them.
  static float initial(size_t p, size_t i) {
    return (static_cast<float>((p * 13 + i) % 64) - 32.0f) * 0.3712345f;
  }
  // Where the gradient of `p` is: the host's buffer or the plugin's (param_view).
  uint16_t* grad(uint32_t p) {
    strata_param_view view{};
    EXPECT_EQ(zero_.param_view(p, &view), STRATA_OK) << zero_.message();
    EXPECT_EQ(view.dtype, dtype_);
    return static_cast<uint16_t*>(view.grad);
  }
  void write_contributions(int step) {
    for (uint32_t p = 0; p < kOddSizes.size(); ++p) {
      uint16_t* g = grad(p);
      for (size_t i = 0; i < kOddSizes[p]; ++i) {
        g[i] = to_half(contribution(p, i, rank_, step), dtype_);
      }
    }
  }
  std::vector<strata_shard> shards() {
    const strata_shard* list = nullptr;
    size_t count = 0;
    EXPECT_EQ(zero_.owned_shards(&list, &count), STRATA_OK) << zero_.message();
    return {list, list + count};
  }

  const int32_t dtype_ = GetParam();
  const int rank_ = CommEnvironment::rank();
  const int size_ = CommEnvironment::size();
  AmpPrecision precision_{dtype_};
  RecordingHost host_;
  Zero zero_{host_, kHalfConfig};
  std::vector<std::vector<uint16_t>> data_, grads_;
  std::vector<std::string> names_;
};

TEST_P(Stage0Half, MastersAreTheWidenedParameters) {
  finalize();
  const auto list = shards();
  ASSERT_EQ(list.size(), kOddSizes.size());
  size_t wrong = 0;
  for (const strata_shard& s : list) {
    EXPECT_EQ(s.offset, 0u);
    EXPECT_EQ(s.count, kOddSizes[s.param_index]);
    for (uint64_t j = 0; j < s.count; ++j) {
      wrong += s.master[j] != from_half(data_[s.param_index][j], dtype_) ? 1 : 0;
    }
  }
  EXPECT_EQ(wrong, 0u);
}

TEST_P(Stage0Half, AveragesTheHalfGradientsInFp32) {
  finalize();
  size_t not_half = 0;  // averages the model dtype cannot hold: the test can tell fp32 from half
  for (int step = 0; step < 2; ++step) {
    write_contributions(step);
    // Each rank reports its own subset in its own order; the plugin must still issue the same
    // collectives everywhere.
    std::vector<uint32_t> order;
    for (uint32_t p = 0; p < kOddSizes.size(); ++p) {
      if ((p + static_cast<uint32_t>(rank_ + step)) % 3 != 0) order.push_back(p);
    }
    std::shuffle(order.begin(), order.end(),
                 std::mt19937(static_cast<unsigned>(rank_ * 31 + step)));
    for (uint32_t p : order) ASSERT_EQ(zero_.grad_ready(p, true), STRATA_OK) << zero_.message();
    ASSERT_EQ(zero_.finish_reduce(), STRATA_OK) << zero_.message();

    size_t wrong = 0;
    std::string first;
    std::vector<float> all;
    for (const strata_shard& s : shards()) {
      ASSERT_NE(s.grad, nullptr);
      for (uint64_t j = 0; j < s.count; ++j) {
        const float expected = fp32_average(s.param_index, j, size_, step);
        not_half += from_half(to_half(expected, dtype_), dtype_) != expected ? 1 : 0;
        all.push_back(s.grad[j]);
        if (s.grad[j] != expected && wrong++ == 0) {
          first = names_[s.param_index] + "[" + std::to_string(j) + "]: got " +
                  std::to_string(s.grad[j]) + ", expected " + std::to_string(expected);
        }
      }
    }
    EXPECT_EQ(wrong, 0u) << "step " << step << ": " << first;
    EXPECT_TRUE(identical_on_all_ranks(all)) << "step " << step;
    ASSERT_EQ(zero_.zero_grad(), STRATA_OK) << zero_.message();
    for (uint32_t p = 0; p < kOddSizes.size(); ++p) {
      const auto& g = grads_[p];
      EXPECT_TRUE(std::all_of(g.begin(), g.end(), [](uint16_t bits) { return bits == 0; }))
          << names_[p] << " not zeroed";
    }
  }
  if (size_ > 1) {
    EXPECT_GT(not_half, 0u) << "the data cannot tell an fp32 from a half reduction";
  }
}

TEST_P(Stage0Half, NonBoundaryMicroStepsLeaveTheHalfGradientsAlone) {
  finalize();
  write_contributions(0);
  const auto before = grads_;
  for (uint32_t p = 0; p < kOddSizes.size(); ++p) {
    ASSERT_EQ(zero_.grad_ready(p, false), STRATA_OK) << zero_.message();
  }
  EXPECT_EQ(grads_, before);
  EXPECT_EQ(host_.bytes(STRATA_MEM_GRADS), 0u) << "no fp32 gradients before the boundary";
}

// The shards name the parameters themselves as their model copies: the step writes them (the
// offload plugin in its pass, or the runtime), and publish leaves them alone. The plugin never
// rounds masters itself (the ABI's model-copy rule), whatever the runtime's minor.
TEST_P(Stage0Half, TheStepWritesTheParametersAndPublishLeavesThem) {
  finalize();
  auto list = shards();
  for (strata_shard& s : list) {
    EXPECT_EQ(s.model, static_cast<void*>(data_[s.param_index].data()));
    EXPECT_EQ(s.model_dtype, dtype_);
    for (uint64_t j = 0; j < s.count; ++j) s.master[j] += 1.0f;
  }
  const auto before = data_;
  ASSERT_EQ(zero_.publish(), STRATA_OK) << zero_.message();
  EXPECT_EQ(data_, before) << "publish rounded what the step is to write";
}

// Model-state bytes the plugin holds (the host's `data` and `grad` are the host's): masters 4Ψ
// always; the fp32 gradient copy 4Ψ from the step's first reduction (or owned_shards) to
// zero_grad; no fusion buffers (buckets are reduced in place in the fp32 copy).
TEST_P(Stage0Half, MemoryByCategoryIsTheLayout) {
  for (bool host_grads : {true, false}) {
    SCOPED_TRACE(host_grads ? "host gradients" : "plugin gradients");
    RecordingHost host;
    precision_.serve(host);
    {
      Zero zero(host, kHalfConfig);
      ASSERT_EQ(zero.created(), STRATA_OK) << zero.message();
      std::vector<std::vector<uint16_t>> data, grads;
      for (uint32_t p = 0; p < kOddSizes.size(); ++p) {
        data.emplace_back(kOddSizes[p], uint16_t{0});
        grads.emplace_back(kOddSizes[p], uint16_t{0});
        ASSERT_EQ(zero.register_param(p, ("w" + std::to_string(p)).c_str(), data[p].data(),
                                      host_grads ? grads[p].data() : nullptr, kOddSizes[p],
                                      dtype_),
                  STRATA_OK) << zero.message();
      }
      ASSERT_EQ(zero.finalize(), STRATA_OK) << zero.message();
      const size_t own_grads = host_grads ? 0 : kElements * 2;
      auto expect_at_rest = [&](const char* when) {
        EXPECT_EQ(host.bytes(STRATA_MEM_MASTER), kElements * sizeof(float)) << when;
        EXPECT_EQ(host.bytes(STRATA_MEM_GRADS), own_grads) << when;
        EXPECT_EQ(host.bytes(STRATA_MEM_COMM_BUFFERS), 0u) << when;
        EXPECT_EQ(host.bytes(STRATA_MEM_PARAMS), 0u) << when;
        EXPECT_EQ(host.bytes(STRATA_MEM_OPTIMIZER_STATE), 0u) << when;
      };
      expect_at_rest("after finalize");
      // The engine's finalize: owned_shards (for the optimizer's init_state), then zero_grad.
      const strata_shard* list = nullptr;
      size_t count = 0;
      ASSERT_EQ(zero.owned_shards(&list, &count), STRATA_OK) << zero.message();
      EXPECT_EQ(host.bytes(STRATA_MEM_GRADS), own_grads + kElements * sizeof(float));
      ASSERT_EQ(zero.zero_grad(), STRATA_OK) << zero.message();
      expect_at_rest("after the engine's finalize");
      for (int step = 0; step < 2; ++step) {
        // The last two parameters (5 and 250 elements) fill the first bucket, which starts.
        ASSERT_EQ(zero.grad_ready(8, true), STRATA_OK) << zero.message();
        EXPECT_EQ(host.bytes(STRATA_MEM_GRADS), own_grads) << "no bucket complete yet";
        ASSERT_EQ(zero.grad_ready(7, true), STRATA_OK) << zero.message();
        EXPECT_EQ(host.bytes(STRATA_MEM_GRADS), own_grads + kElements * sizeof(float))
            << "the first reduction creates the fp32 gradients";
        ASSERT_EQ(zero.finish_reduce(), STRATA_OK) << zero.message();
        ASSERT_EQ(zero.owned_shards(&list, &count), STRATA_OK) << zero.message();
        EXPECT_EQ(host.bytes(STRATA_MEM_GRADS), own_grads + kElements * sizeof(float));
        ASSERT_EQ(zero.publish(), STRATA_OK) << zero.message();
        ASSERT_EQ(zero.zero_grad(), STRATA_OK) << zero.message();
        expect_at_rest("after a step");
      }
    }
    for (int c = 0; c < STRATA_MEM_CATEGORY_COUNT; ++c) {
      EXPECT_EQ(host.bytes(static_cast<strata_mem_category>(c)), 0u)
          << "category " << c << " leaked";
    }
  }
}

TEST_P(Stage0Half, NeedsAPrecisionStratumToConvert) {
  RecordingHost bare;  // no precision stratum
  Zero zero(bare, kHalfConfig);
  std::vector<uint16_t> d(4), g(4);
  ASSERT_EQ(zero.register_param(0, "w", d.data(), g.data(), 4, dtype_), STRATA_OK)
      << zero.message();
  EXPECT_EQ(zero.finalize(), STRATA_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(zero.message(), "precision stratum")) << zero.message();
  EXPECT_TRUE(contains(zero.message(), dtype_label(dtype_))) << zero.message();
}

TEST_P(Stage0Half, OneModelDtypeForAllParameters) {
  std::vector<uint16_t> d(4), g(4);
  std::vector<float> d32(4), g32(4);
  ASSERT_EQ(zero_.register_param(0, "half.weight", d.data(), g.data(), 4, dtype_), STRATA_OK);
  ASSERT_EQ(zero_.register_param(1, "fp32.bias", d32.data(), g32.data(), 4, STRATA_F32),
            STRATA_OK);
  EXPECT_EQ(zero_.finalize(), STRATA_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(zero_.message(), "half.weight")) << zero_.message();
  EXPECT_TRUE(contains(zero_.message(), "fp32.bias")) << zero_.message();
  EXPECT_TRUE(contains(zero_.message(), "one model dtype")) << zero_.message();
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Stage0Half, ::testing::Values(STRATA_BF16, STRATA_F16),
                         [](const auto& info) { return dtype_label(info.param); });

}  // namespace
}  // namespace strata::zero_test
