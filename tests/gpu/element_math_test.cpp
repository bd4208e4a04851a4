// The CUDA kernels' per-element math (strata_common/element_math.hpp), run on the host, against
// the CPU kernels it must reproduce: casts bit for bit against the amp plugin's (every f16 and
// bf16 pattern, and special plus random f32s, on every amp instruction set this CPU has), the
// optimizer updates within 1e-6 relative of the offload plugin's kernels over several steps (on
// every offload instruction set), and the overflow/squared-norm per-element semantics against
// amp's grad_stats. Runs everywhere: it needs no GPU and no CUDA.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <strata_common/element_math.hpp>
#include <strata/half.hpp>
#include <strata/plugin.hpp>
#include <vector>

#include <strata_common/cpu_isa.hpp>
#include "kernel_references.hpp"

namespace strata::test::kernels {
namespace {

namespace math = cuda::math;

// ---- casts ----------------------------------------------------------------------------------

TEST(ElementMathCast, WideningEveryHalfPatternMatchesAmp) {
  const std::vector<uint16_t> halves = all_half_patterns();
  for (amp::Isa isa : amp_isas()) {
    SCOPED_TRACE(amp::isa_name(isa));
    const amp::Kernels& k = amp::kernels_for(isa);
    const std::vector<float> f16 = amp_widen(k, STRATA_F16, halves);
    const std::vector<float> bf16 = amp_widen(k, STRATA_BF16, halves);
    for (uint32_t h = 0; h < 65536; ++h) {
      const auto p = static_cast<uint16_t>(h);
      ASSERT_EQ(bits(math::f16_to_f32(p)), bits(f16[h])) << "f16 pattern 0x" << std::hex << h;
      ASSERT_EQ(bits(math::bf16_to_f32(p)), bits(bf16[h])) << "bf16 pattern 0x" << std::hex << h;
    }
  }
}

TEST(ElementMathCast, NarrowingMatchesAmpAndTheSdk) {
  const std::vector<float> values = f32_samples(1 << 20, 7);
  for (amp::Isa isa : amp_isas()) {
    SCOPED_TRACE(amp::isa_name(isa));
    const amp::Kernels& k = amp::kernels_for(isa);
    const std::vector<uint16_t> f16 = amp_narrow(k, STRATA_F16, values);
    const std::vector<uint16_t> bf16 = amp_narrow(k, STRATA_BF16, values);
    for (std::size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(math::f32_to_f16(values[i]), f16[i])
          << "f32 0x" << std::hex << bits(values[i]) << " to f16";
      ASSERT_EQ(math::f32_to_bf16(values[i]), bf16[i])
          << "f32 0x" << std::hex << bits(values[i]) << " to bf16";
    }
  }
  // strata/half.hpp is the SDK's scalar reference for narrowing.
  for (float v : values) {
    ASSERT_EQ(math::f32_to_f16(v), float_to_f16(v)) << std::hex << bits(v);
    ASSERT_EQ(math::f32_to_bf16(v), float_to_bf16(v)) << std::hex << bits(v);
  }
}

TEST(ElementMathCast, RoundTripOfEveryFiniteHalfIsExact) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto p = static_cast<uint16_t>(h);
    if ((h & 0x7c00u) != 0x7c00u) {
      ASSERT_EQ(math::f32_to_f16(math::f16_to_f32(p)), p) << std::hex << h;
    }
    if ((h & 0x7f80u) != 0x7f80u) {
      ASSERT_EQ(math::f32_to_bf16(math::bf16_to_f32(p)), p) << std::hex << h;
    }
  }
}

// ---- overflow check and squared norm ----------------------------------------------------------

// What the device does per element (square in fp64, finite check), added up in order.
amp::GradStats element_stats(const std::vector<std::vector<float>>& tensors) {
  amp::GradStats s;
  for (const auto& t : tensors) {
    for (float x : t) {
      s.sum_sq += math::square(x);
      s.nonfinite = s.nonfinite || !math::is_finite(x);
    }
  }
  return s;
}

void expect_same_stats(const std::vector<std::vector<float>>& tensors, bool want_nonfinite) {
  const amp::GradStats want = amp_grad_stats(tensors);
  const amp::GradStats got = element_stats(tensors);
  EXPECT_EQ(want.nonfinite, want_nonfinite);
  EXPECT_EQ(got.nonfinite, want.nonfinite);
  if (want.nonfinite) {
    EXPECT_FALSE(std::isfinite(got.sum_sq));
  } else {
    EXPECT_NEAR(got.sum_sq, want.sum_sq, 1e-12 * want.sum_sq);
  }
}

std::vector<std::vector<float>> random_tensors(std::mt19937& rng, float spread) {
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<std::vector<float>> out;
  for (std::size_t n : {1u, 17u, 65536u, 65537u, 200003u, 0u, 4096u}) {
    std::vector<float> t(n);
    for (float& x : t) x = normal(rng);
    out.push_back(std::move(t));
  }
  return out;
}

TEST(ElementMathGradStats, FiniteSumsMatchAmp) {
  std::mt19937 rng(3);
  expect_same_stats(random_tensors(rng, 1.0f), false);
  expect_same_stats(random_tensors(rng, 1e30f), false);  // squares far beyond FLT_MAX
  expect_same_stats(random_tensors(rng, 1e-40f), false);  // subnormal floats
  std::vector<std::vector<float>> extremes = {
      {std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
       std::numeric_limits<float>::denorm_min(), 0.0f, -0.0f}};
  expect_same_stats(extremes, false);
}

TEST(ElementMathGradStats, EveryNonFiniteKindIsFlaggedAsAmpFlagsIt) {
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN(), from_bits(0x7f800001u),
                    from_bits(0xffc00001u)}) {
    std::mt19937 rng(5);
    auto tensors = random_tensors(rng, 1.0f);
    tensors[4][123457] = bad;  // inside the fourth kSumBlock of a later tensor
    SCOPED_TRACE(bits(bad));
    expect_same_stats(tensors, true);
  }
}

// f16/bf16 gradients: the device widens each element (math::*_to_f32) before squaring; amp
// grad_stats reads f32, so it gets them through amp's own widening.
TEST(ElementMathGradStats, HalfGradientsMatchAmpOnTheirWidenedValues) {
  const std::vector<uint16_t> halves = all_half_patterns();
  const amp::Kernels& k = amp::portable_kernels();
  for (strata_dtype dtype : {STRATA_F16, STRATA_BF16}) {
    const uint16_t exp_mask = dtype == STRATA_F16 ? 0x7c00 : 0x7f80;
    std::vector<uint16_t> finite;
    for (uint16_t h : halves) {
      if ((h & exp_mask) != exp_mask) finite.push_back(h);
    }
    const std::vector<uint16_t>* const sets[] = {&halves, &finite};
    for (const std::vector<uint16_t>* set : sets) {
      std::vector<float> device_view(set->size());
      for (std::size_t i = 0; i < set->size(); ++i) {
        device_view[i] = dtype == STRATA_F16 ? math::f16_to_f32((*set)[i])
                                             : math::bf16_to_f32((*set)[i]);
      }
      const std::vector<float> amp_view = amp_widen(k, dtype, *set);
      const amp::GradStats want = amp_grad_stats({amp_view});
      const amp::GradStats got = element_stats({device_view});
      EXPECT_EQ(got.nonfinite, want.nonfinite);
      EXPECT_EQ(want.nonfinite, set == &halves);
      if (!want.nonfinite) {
        EXPECT_NEAR(got.sum_sq, want.sum_sq, 1e-12 * want.sum_sq);
      }
    }
  }
}

// ---- optimizers ---------------------------------------------------------------------------------

struct OptimizerParam {
  OptimizerCase c;
  strata_dtype grad_dtype;
  strata_dtype model_dtype;  // STRATA_F32: no copy-out
};

void PrintTo(const OptimizerParam& p, std::ostream* os) {
  *os << p.c.name << "/grad_" << sdk::dtype_name(p.grad_dtype) << "/copy_"
      << (p.model_dtype == STRATA_F32 ? "none" : sdk::dtype_name(p.model_dtype));
}

class ElementMathOptimizer : public ::testing::TestWithParam<OptimizerParam> {};

// Five steps from the same start, each side keeping its own state (so differences could grow);
// every array within 1e-6 relative (Errors) after every step, each copy-out its own parameter
// rounded. Where the CPU path fuses its multiply-adds (AVX2, AVX-512) every parameter must be the
// same bits; on the portable path (separate multiply and add) the test prints how many are.
TEST_P(ElementMathOptimizer, FiveStepsMatchTheOffloadKernels) {
  const OptimizerParam& p = GetParam();
  constexpr std::size_t kN = 4099;  // whole vectors of every width and a remainder
  for (common::cpu::Isa isa : {common::cpu::Isa::scalar, common::cpu::Isa::avx2,
                                common::cpu::Isa::avx512}) {
    if (!common::cpu::isa_available(isa)) continue;
    SCOPED_TRACE(common::cpu::isa_name(isa));
    std::mt19937 rng(11);
    const bool copy = p.model_dtype != STRATA_F32;
    HostTensor cpu = make_tensor(p.c, kN, copy, rng);
    HostTensor dev = cpu;
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::size_t exact = 0;
    for (int step = 1; step <= 5; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      // Gradients as stored (rounded to grad_dtype when that is a half), then as read: widened.
      std::vector<float> g(kN);
      for (float& x : g) {
        x = normal(rng) * 4.0f;
        if (p.grad_dtype == STRATA_F16) x = math::f16_to_f32(math::f32_to_f16(x));
        if (p.grad_dtype == STRATA_BF16) x = math::bf16_to_f32(math::f32_to_bf16(x));
      }
      offload_step(p.c, step, cpu, g.data(), p.model_dtype, isa);
      element_step(p.c, step, dev, g.data(), p.model_dtype);
      for (const auto& [name, got, want] :
           {std::tuple{"param", &dev.param, &cpu.param},
            std::tuple{"state 0", &dev.state0, &cpu.state0},
            std::tuple{"state 1", &dev.state1, &cpu.state1}}) {
        const Errors e = compare(*got, *want);
        ASSERT_TRUE(e.acceptable()) << name << ": " << e;
      }
      for (std::size_t i = 0; i < kN && copy; ++i) {
        const float x = dev.param[i];
        ASSERT_EQ(dev.copy[i], p.model_dtype == STRATA_F16 ? math::f32_to_f16(x)
                                                           : math::f32_to_bf16(x));
        ASSERT_EQ(cpu.copy[i], p.model_dtype == STRATA_F16 ? float_to_f16(cpu.param[i])
                                                           : float_to_bf16(cpu.param[i]));
      }
      for (std::size_t i = 0; i < kN; ++i) exact += bits(dev.param[i]) == bits(cpu.param[i]);
    }
    std::printf("[ figures  ] %s on %s: %zu of %zu parameter values bitwise equal\n",
                p.c.name.c_str(), common::cpu::isa_name(isa), exact, 5 * kN);
    // Fused multiply-adds on both sides: nothing left to round differently.
    if (isa != common::cpu::Isa::scalar) {
      EXPECT_EQ(exact, 5 * kN);
    }
  }
}

std::vector<OptimizerParam> optimizer_params() {
  std::vector<OptimizerParam> out;
  for (const OptimizerCase& c : optimizer_cases()) {
    out.push_back({c, STRATA_F32, STRATA_F32});
    out.push_back({c, STRATA_F32, STRATA_F16});
    out.push_back({c, STRATA_F16, STRATA_BF16});
    out.push_back({c, STRATA_BF16, STRATA_F16});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllOptimizers, ElementMathOptimizer,
                         ::testing::ValuesIn(optimizer_params()),
                         [](const ::testing::TestParamInfo<OptimizerParam>& info) {
                           std::ostringstream os;
                           PrintTo(info.param, &os);
                           std::string name = os.str();
                           for (char& ch : name) {
                             if (ch == '/') ch = '_';
                           }
                           return name;
                         });

// The SGD first-step rule: with buffer_live false the buffer becomes the (decayed, scaled)
// gradient whatever it held, as torch clones the gradient.
TEST(ElementMathSgd, FirstStepBufferIsTheGradient) {
  const common::optim::SgdScalars s =
      common::optim::make_sgd_scalars({0.1, 0.9, 0.5, 0.01, false}, 0.5, /*buffer_live=*/false);
  float x = 2.0f, buf = 123.0f;
  math::sgd_update_momentum(s, x, 4.0f, buf);
  EXPECT_FLOAT_EQ(buf, 4.0f * 0.5f + 0.01f * 2.0f);
  EXPECT_FLOAT_EQ(x, 2.0f - 0.1f * buf);
}

TEST(ElementMathLion, SignKeepsZeroAndNan) {
  EXPECT_EQ(math::sign_of(3.0f), 1.0f);
  EXPECT_EQ(math::sign_of(-1e-30f), -1.0f);
  EXPECT_EQ(bits(math::sign_of(-0.0f)), bits(-0.0f));
  EXPECT_TRUE(std::isnan(math::sign_of(std::numeric_limits<float>::quiet_NaN())));
}

}  // namespace
}  // namespace strata::test::kernels
