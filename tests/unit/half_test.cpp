// The SDK's scalar half conversions (strata/half.hpp) against an independent reference: every f16
// and bf16 bit pattern widens exactly, and narrowing rounds to nearest even by exhaustive
// comparison with the nearest representable value.
#include <strata/half.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace {

// Reference f16 -> double: sign · 2^(e-15) · (1 + m/1024), subnormals 2^-14 · m/1024.
double f16_value(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(m, -24);
  return sign * std::ldexp(1024 + m, e - 25);
}

TEST(Half, EveryF16PatternWidensExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const double expected = f16_value(static_cast<uint16_t>(h));
    const float got = strata::f16_to_float(static_cast<uint16_t>(h));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got)) << h;
    } else {
      EXPECT_EQ(static_cast<double>(got), expected) << h;
      EXPECT_EQ(std::signbit(got), (h & 0x8000) != 0) << h;
    }
  }
}

TEST(Half, EveryFiniteF16RoundTripsAndMidpointsRoundToEven) {
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // positive finite values
    const auto half = static_cast<uint16_t>(h);
    EXPECT_EQ(strata::float_to_f16(strata::f16_to_float(half)), half) << h;
    EXPECT_EQ(strata::float_to_f16(-strata::f16_to_float(half)), half | 0x8000) << h;
    if (h + 1 >= 0x7c00) continue;
    // The exact midpoint to the next value goes to whichever of the two has an even mantissa.
    const double mid = (f16_value(half) + f16_value(static_cast<uint16_t>(h + 1))) / 2;
    const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : half;
    EXPECT_EQ(strata::float_to_f16(static_cast<float>(mid)), even) << h;
  }
}

TEST(Half, F16EdgeValues) {
  EXPECT_EQ(strata::float_to_f16(65504.0f), 0x7bff);  // max
  EXPECT_EQ(strata::float_to_f16(65519.99f), 0x7bff);
  EXPECT_EQ(strata::float_to_f16(65520.0f), 0x7c00);  // halfway to 2^16 rounds to inf
  EXPECT_EQ(strata::float_to_f16(INFINITY), 0x7c00);
  EXPECT_EQ(strata::float_to_f16(-INFINITY), 0xfc00);
  EXPECT_EQ(strata::float_to_f16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(strata::float_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: zero
  EXPECT_EQ(strata::float_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_TRUE(std::isnan(strata::f16_to_float(strata::float_to_f16(NAN))));
}

TEST(Half, Bf16WidensExactlyAndRoundsToEven) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto half = static_cast<uint16_t>(h);
    const float f = strata::bf16_to_float(half);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    EXPECT_EQ(bits, h << 16) << h;
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(strata::bf16_to_float(strata::float_to_bf16(f)))) << h;
      continue;
    }
    EXPECT_EQ(strata::float_to_bf16(f), half) << h;
    // Midpoint between h and h+1 (same sign, finite): rounds to the even one.
    if ((h & 0x7fff) < 0x7f7f) {
      const uint32_t mid_bits = (h << 16) | 0x8000u;
      float mid;
      std::memcpy(&mid, &mid_bits, 4);
      EXPECT_EQ(strata::float_to_bf16(mid), (h & 1) ? h + 1 : h) << h;
    }
  }
  EXPECT_EQ(strata::float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
}

}  // namespace
