// The kernels' fp32 -> f16 / bf16 conversion (the copy-out) on every path this CPU has: special
// values, ties, subnormals, overflow, and a million random bit patterns, against references that
// round from the value rather than from its bits.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "cpu_reference.hpp"
#include "cpu_test_support.hpp"
#include "optimizer_kernels.hpp"

namespace strata::test {
namespace {

using CpuIsa = common::cpu::Isa;
using common::cpu::isa_name;
using offload::HalfType;

std::vector<float> special_values() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {
      0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, inf, -inf,
      std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
      std::bit_cast<float>(0x7F800001u),  // signalling NaN
      std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
      std::numeric_limits<float>::denorm_min(), 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, 0x1p-14f,
      0x1.ff8p-15f,
      // f16 ties (11 significant bits kept) and bf16 ties (8 kept)
      1.0f + 0x1p-11f, 1.0f + 0x3p-11f, -(1.0f + 0x1p-11f), 1.0f + 0x1p-8f, 1.0f + 0x3p-8f,
      0x1.fep127f, 0x1.fdp127f, 0x1.ffp127f, -0x1.ffp127f, 3.14159265f, -2.71828f};
  for (int e = -30; e <= 20; ++e) {
    v.push_back(std::ldexp(1.0f, e) * 1.00048828125f);  // just over an f16 half-ulp
  }
  return v;
}

std::vector<float> random_bit_patterns(std::size_t n) {
  std::mt19937 rng(7u);
  std::vector<float> v(n);
  for (float& x : v) x = std::bit_cast<float>(static_cast<uint32_t>(rng()));
  return v;
}

bool same_half(HalfType type, uint16_t got, uint16_t want) {
  const uint16_t exp_mask = type == HalfType::f16 ? 0x7C00 : 0x7F80;
  const uint16_t mant_mask = type == HalfType::f16 ? 0x03FF : 0x007F;
  const auto is_nan = [&](uint16_t h) { return (h & exp_mask) == exp_mask && (h & mant_mask); };
  // NaN payloads are not specified: NaN for NaN, with its sign, is what matters.
  if (is_nan(want)) return is_nan(got) && (got & 0x8000) == (want & 0x8000);
  return got == want;
}

class CpuHalfConversion : public ::testing::TestWithParam<std::tuple<CpuIsa, HalfType>> {};

TEST_P(CpuHalfConversion, RoundsToNearestEvenLikeTheReference) {
  const auto [isa, type] = GetParam();
  if (!common::cpu::isa_available(isa)) GTEST_SKIP() << isa_name(isa) << ": not on this CPU";
  const offload::OptimizerKernels& kernels = offload::kernels_for(isa);
  for (const std::vector<float>& values : {special_values(), random_bit_patterns(1 << 20)}) {
    std::vector<uint16_t> out(values.size() + 1, 0xABCD);  // +1: nothing written past the end
    kernels.convert_to_half(type, values.data(), out.data(), values.size());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const uint16_t want = reference_half_bits(type, values[i]);
      if (!same_half(type, out[i], want) && ++wrong <= 5) {
        ADD_FAILURE() << std::hexfloat << values[i] << " (bits 0x" << std::hex
                      << std::bit_cast<uint32_t>(values[i]) << "): got 0x" << out[i]
                      << ", expected 0x" << want;
      }
    }
    EXPECT_EQ(wrong, 0u) << "of " << values.size();
    EXPECT_EQ(out.back(), 0xABCD);
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, CpuHalfConversion,
                         ::testing::Combine(::testing::Values(CpuIsa::scalar, CpuIsa::avx2,
                                                              CpuIsa::avx512),
                                            ::testing::Values(HalfType::f16, HalfType::bf16)),
                         [](const auto& info) {
                           return std::string(isa_name(std::get<0>(info.param))) + "_" +
                                  half_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace strata::test
