// The f16/bf16 <-> f32 conversions the comm plugins' half-precision reductions use (the SDK's array
// helpers, strata/comm/half_arrays.hpp, over its scalar conversions, strata/half.hpp) against
// independent references, exhaustively over every 16-bit pattern and over a sweep of f32 values
// including ties, overflow, subnormals, infinities and NaNs.
#include "f16_reference.hpp"
#include "reference.hpp"

#include <gtest/gtest.h>
#include <strata/comm/half_arrays.hpp>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

namespace strata::sdk::comm {
namespace {

// One element through the array helpers, exactly as the reductions convert.
float f16_to_f32(uint16_t bits) {
  float value = 0;
  half_to_f32(STRATA_F16, &bits, &value, 1);
  return value;
}
float bf16_to_f32(uint16_t bits) {
  float value = 0;
  half_to_f32(STRATA_BF16, &bits, &value, 1);
  return value;
}
uint16_t f32_to_f16(float value) {
  uint16_t bits = 0;
  f32_to_half(STRATA_F16, &value, &bits, 1);
  return bits;
}
uint16_t f32_to_bf16(float value) {
  uint16_t bits = 0;
  f32_to_half(STRATA_BF16, &value, &bits, 1);
  return bits;
}

using test::comm::reference_bf16;
using test::comm::reference_f16;

bool is_nan16(uint16_t bits, uint16_t exponent_mask) {
  return (bits & exponent_mask) == exponent_mask && (bits & ~(exponent_mask | 0x8000)) != 0;
}

TEST(Half, EveryF16RoundTripsThroughF32) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = f16_to_f32(h);
    EXPECT_EQ(std::bit_cast<uint32_t>(f),
              test::f16_to_f32_bits(h))
        << std::hex << bits;
    if (is_nan16(h, 0x7c00)) {
      EXPECT_TRUE(is_nan16(f32_to_f16(f), 0x7c00)) << std::hex << bits;
    } else {
      EXPECT_EQ(f32_to_f16(f), h) << std::hex << bits;
    }
  }
}

TEST(Half, EveryBf16RoundTripsThroughF32) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = bf16_to_f32(h);
    EXPECT_EQ(std::bit_cast<uint32_t>(f), bits << 16);
    if (is_nan16(h, 0x7f80)) {
      EXPECT_TRUE(is_nan16(f32_to_bf16(f), 0x7f80)) << std::hex << bits;
    } else {
      EXPECT_EQ(f32_to_bf16(f), h) << std::hex << bits;
    }
  }
}

// Every f32 whose low 13 bits take the values around the f16 rounding point (and similarly the
// low 16 bits for bf16), across all exponents and signs: ties, just below and just above.
TEST(Half, F32RoundsToNearestEvenLikeTheReference) {
  const uint32_t f16_tails[] = {0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff};
  const uint32_t bf16_tails[] = {0, 1, 0x7fff, 0x8000, 0x8001, 0xffff};
  for (uint32_t sign = 0; sign < 2; ++sign) {
    for (uint32_t exponent = 0; exponent < 256; ++exponent) {
      for (uint32_t top = 0; top < 1024; top += 73) {
        const uint32_t base = (sign << 31) | (exponent << 23);
        for (uint32_t tail : f16_tails) {
          const float f = std::bit_cast<float>(base | (top << 13) | tail);
          const uint16_t got = f32_to_f16(f), want = reference_f16(f);
          if (std::isnan(f)) {
            EXPECT_TRUE(is_nan16(got, 0x7c00));
          } else {
            EXPECT_EQ(got, want) << f << " bits " << std::hex << std::bit_cast<uint32_t>(f);
          }
        }
        for (uint32_t tail : bf16_tails) {
          const float f = std::bit_cast<float>(base | ((top & 0x7f) << 16) | tail);
          const uint16_t got = f32_to_bf16(f), want = reference_bf16(f);
          if (std::isnan(f)) {
            EXPECT_TRUE(is_nan16(got, 0x7f80));
          } else {
            EXPECT_EQ(got, want) << f << " bits " << std::hex << std::bit_cast<uint32_t>(f);
          }
        }
      }
    }
  }
}

TEST(Half, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(f32_to_f16(inf), 0x7c00);
  EXPECT_EQ(f32_to_f16(-inf), 0xfc00);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // the tie above the largest finite rounds to inf
  EXPECT_EQ(f32_to_f16(0x1p-25f), 0x0000);  // tie between 0 and the smallest subnormal: even
  EXPECT_EQ(f32_to_f16(0x1.8p-25f), 0x0001);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16(inf), 0x7f80);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(-std::nanf("")))));
  EXPECT_TRUE(std::signbit(bf16_to_f32(f32_to_bf16(-std::nanf("")))));
}

// The whole-array forms convert every element as the SDK's scalars do (f16 NaNs widen quiet).
TEST(Half, ArraysAgreeWithTheSdkScalars) {
  std::vector<uint16_t> bits(0x10000);
  for (uint32_t b = 0; b <= 0xffff; ++b) bits[b] = static_cast<uint16_t>(b);
  std::vector<float> wide(bits.size());
  std::vector<uint16_t> narrow(bits.size());
  for (int32_t dtype : {STRATA_F16, STRATA_BF16}) {
    SCOPED_TRACE(dtype == STRATA_F16 ? "f16" : "bf16");
    half_to_f32(dtype, bits.data(), wide.data(), bits.size());
    f32_to_half(dtype, wide.data(), narrow.data(), wide.size());
    for (uint32_t b = 0; b <= 0xffff; ++b) {
      const auto h = static_cast<uint16_t>(b);
      const float scalar = dtype == STRATA_F16 ? strata::f16_to_float(h) : strata::bf16_to_float(h);
      if (std::isnan(scalar)) {
        ASSERT_TRUE(std::isnan(wide[b])) << std::hex << b;
        ASSERT_EQ(std::bit_cast<uint32_t>(wide[b]) | 0x400000u,
                  std::bit_cast<uint32_t>(scalar) | 0x400000u)
            << std::hex << b;
      } else {
        ASSERT_EQ(std::bit_cast<uint32_t>(wide[b]), std::bit_cast<uint32_t>(scalar))
            << std::hex << b;
      }
      const uint16_t back =
          dtype == STRATA_F16 ? strata::float_to_f16(wide[b]) : strata::float_to_bf16(wide[b]);
      ASSERT_EQ(narrow[b], back) << std::hex << b;
    }
  }
}

}  // namespace
}  // namespace strata::sdk::comm
