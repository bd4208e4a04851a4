// strata_amp cast: f32 <-> f32/f64/f16/bf16. Edge values round-trip, rounding is to nearest with
// ties to even (hand-checked bit patterns, then an independent search-based reference over many
// values), inf and nan survive, and malformed requests fail.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "f16_reference.hpp"
#include "optim_harness.hpp"

namespace strata::test {
namespace {

float from_bits(uint32_t b) { return std::bit_cast<float>(b); }
uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
const float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

class AmpCast : public ::testing::Test {
 protected:
  template <class Src, class Dst>
  strata_status cast(const std::vector<Src>& src, int32_t src_dtype, std::vector<Dst>& dst,
                     int32_t dst_dtype) {
    const strata_buffer s = sdk::host_buffer(const_cast<Src*>(src.data()), src.size(), src_dtype);
    const strata_buffer d = sdk::host_buffer(dst.data(), dst.size(), dst_dtype);
    return amp_.ops().cast(amp_.self(), &s, &d, &err_);
  }
  std::vector<uint16_t> to_16(const std::vector<float>& in, int32_t dtype) {
    std::vector<uint16_t> out(in.size(), 0xdead);
    EXPECT_EQ(cast(in, STRATA_F32, out, dtype), STRATA_OK) << err_.message;
    return out;
  }
  std::vector<float> from_16(const std::vector<uint16_t>& in, int32_t dtype) {
    std::vector<float> out(in.size(), -7.0f);
    EXPECT_EQ(cast(in, dtype, out, STRATA_F32), STRATA_OK) << err_.message;
    return out;
  }
  // Checks hand-computed (input bits, expected 16-bit pattern) pairs.
  void expect_patterns(const std::vector<std::pair<uint32_t, uint16_t>>& cases, int32_t dtype) {
    std::vector<float> in;
    for (const auto& c : cases) in.push_back(from_bits(c.first));
    const std::vector<uint16_t> out = to_16(in, dtype);
    for (size_t i = 0; i < cases.size(); ++i) {
      EXPECT_EQ(out[i], cases[i].second)
          << std::hex << "input bits 0x" << cases[i].first << " (" << in[i] << ")";
    }
  }

  FakeHost host_;
  Instance<strata_precision_ops> amp_{amp_ops(), host_, "{}"};
  strata_error err_ = sdk::make_error();
};

TEST_F(AmpCast, F16RoundsToNearestEvenOnHandCheckedPatterns) {
  expect_patterns({{0x00000000, 0x0000},
                   {0x80000000, 0x8000},  // +-0
                   {0x3f800000, 0x3c00},
                   {0xc0000000, 0xc000},  // 1, -2
                   {bits(1.0f / 3), 0x3555},
                   {0x3f801000, 0x3c00},  // 1 + 2^-11: tie between 0x3c00 and 0x3c01 -> even
                   {0x3f803000, 0x3c02},  // 1 + 3*2^-11: tie between 0x3c01 and 0x3c02 -> even
                   {0x3f801001, 0x3c01},  // just above the tie
                   {0x45001000, 0x6800},  // 2049: tie between 2048 and 2050 -> 2048
                   {0x45003000, 0x6802},  // 2051: tie between 2050 and 2052 -> 2052
                   {0x477fe000, 0x7bff},  // 65504, the largest finite f16
                   {0x477fefff, 0x7bff},  // just below 65520
                   {0x477ff000, 0x7c00},  // 65520: tie between 65504 (odd) and 2^16 -> inf
                   {0x7f7fffff, 0x7c00},
                   {0xff7fffff, 0xfc00},  // +-FLT_MAX overflow to inf
                   {0x7f800000, 0x7c00},
                   {0xff800000, 0xfc00},  // +-inf
                   {0x38800000, 0x0400},  // 2^-14, the smallest normal
                   {0x387fc000, 0x03ff},  // 2^-14 - 2^-24, the largest subnormal (exact)
                   {0x387fe000, 0x0400},  // 2^-14 - 2^-25: tie between 0x03ff and 0x0400
                   {0x33800000, 0x0001},  // 2^-24, the smallest subnormal
                   {0x33000000, 0x0000},  // 2^-25: tie between 0 and 0x0001 -> 0
                   {0x33000001, 0x0001},  // just above 2^-25
                   {0x33c00000, 0x0002},  // 3*2^-25: tie between 1 and 2 -> 2
                   {0x34200000, 0x0002},  // 5*2^-25: tie between 2 and 3 -> 2
                   {0x00000001, 0x0000},
                   {0x80000001, 0x8000}},  // f32 subnormals
                  STRATA_F16);
}

TEST_F(AmpCast, Bf16RoundsToNearestEvenOnHandCheckedPatterns) {
  expect_patterns({{0x00000000, 0x0000},
                   {0x80000000, 0x8000},
                   {0x3f800000, 0x3f80},
                   {0xbfc00000, 0xbfc0},  // 1, -1.5
                   {0x3f808000, 0x3f80},  // 1 + 2^-8: tie -> even 0x3f80
                   {0x3f818000, 0x3f82},  // 1 + 3*2^-8: tie -> even 0x3f82
                   {0x3f808001, 0x3f81},  // just above the tie
                   {0x7f7f0000, 0x7f7f},  // the largest finite bf16
                   {0x7f7e8000, 0x7f7e},  // tie, even stays
                   {0x7f7f8000, 0x7f80},  // tie above the largest (odd) -> inf
                   {0x7f7fffff, 0x7f80},
                   {0xff7fffff, 0xff80},  // +-FLT_MAX -> +-inf
                   {0x7f800000, 0x7f80},
                   {0xff800000, 0xff80},
                   {0x00000001, 0x0000},  // the smallest f32 subnormal
                   {0x00008000, 0x0000},  // tie between 0 and the smallest bf16 subnormal
                   {0x00008001, 0x0001},
                   {0x00018000, 0x0002},
                   {0x807fffff, 0x8080}},  // largest f32 subnormal rounds up to -FLT_MIN
                  STRATA_BF16);
}

// A nan keeps its sign and the top bits of its payload, and comes out quiet (signalling inputs
// included): f16 keeps payload bits 22-13, bf16 bits 22-16, and widening sets fp32's quiet bit.
TEST_F(AmpCast, NanStaysNanQuietWithItsSignAndPayload) {
  const std::vector<uint32_t> nans = {0x7fc00000, 0xffc00000, 0x7f800001, 0xffc00001,
                                      0x7fbfffff, 0x7fa02000, 0xff812345};
  std::vector<float> in;
  for (uint32_t b : nans) in.push_back(from_bits(b));
  const std::vector<uint16_t> h = to_16(in, STRATA_F16), b = to_16(in, STRATA_BF16);
  for (size_t i = 0; i < nans.size(); ++i) {
    const uint32_t x = nans[i];
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
    EXPECT_EQ(h[i], sign | 0x7e00 | ((x >> 13) & 0x3ff)) << std::hex << "f16 from 0x" << x;
    EXPECT_EQ(b[i], static_cast<uint16_t>((x | 0x00400000) >> 16))
        << std::hex << "bf16 from 0x" << x;
  }
  // Signalling 16-bit nans (quiet bit clear, payload non-zero) widen to quiet fp32 nans.
  const std::vector<uint16_t> snan16 = {0x7c01, 0xfd55, 0x7dff}, snan_b = {0x7f81, 0xffa5, 0x7fbf};
  const std::vector<float> w16 = from_16(snan16, STRATA_F16), wb = from_16(snan_b, STRATA_BF16);
  for (size_t i = 0; i < snan16.size(); ++i) {
    EXPECT_EQ(bits(w16[i]), (static_cast<uint32_t>(snan16[i] & 0x8000) << 16) | 0x7fc00000u |
                                (static_cast<uint32_t>(snan16[i] & 0x3ff) << 13))
        << std::hex << "f16 0x" << snan16[i];
    EXPECT_EQ(bits(wb[i]), (static_cast<uint32_t>(snan_b[i]) << 16) | 0x00400000u)
        << std::hex << "bf16 0x" << snan_b[i];
  }
  std::vector<double> wide(in.size());
  ASSERT_EQ(cast(in, STRATA_F32, wide, STRATA_F64), STRATA_OK) << err_.message;
  for (double w : wide) EXPECT_TRUE(std::isnan(w));
}

// Every finite 16-bit pattern decodes to its exact value and encodes back to itself.
TEST_F(AmpCast, EverySixteenBitPatternRoundTrips) {
  struct Format {
    int32_t dtype;
    double (*value)(uint16_t);
    uint16_t exp_mask;
  };
  for (const Format& f :
       {Format{STRATA_F16, f16_exact, 0x7c00}, Format{STRATA_BF16, bf16_exact, 0x7f80}}) {
    std::vector<uint16_t> all(65536);
    for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
    const std::vector<float> wide = from_16(all, f.dtype);
    const std::vector<uint16_t> back = to_16(wide, f.dtype);
    for (uint32_t i = 0; i < all.size(); ++i) {
      const bool special = (i & f.exp_mask) == f.exp_mask;
      const bool is_nan = special && (i & ~f.exp_mask & 0x7fff) != 0;
      if (is_nan) {  // quiet, same sign, payload moved to the top of fp32's mantissa
        const uint32_t payload = i & ~f.exp_mask & 0x7fffu;
        const uint32_t shift = f.dtype == STRATA_F16 ? 13 : 16;
        const uint32_t expected_bits = ((i & 0x8000u) << 16) | 0x7fc00000u | (payload << shift);
        ASSERT_EQ(bits(wide[i]), expected_bits) << "dtype " << f.dtype << " pattern " << i;
        continue;
      }
      const double expected = special ? ((i & 0x8000) ? -HUGE_VAL : HUGE_VAL) : f.value(all[i]);
      ASSERT_EQ(static_cast<double>(wide[i]), expected) << "dtype " << f.dtype << " pattern " << i;
      ASSERT_EQ(std::signbit(wide[i]), (i & 0x8000) != 0) << "pattern " << i;
      ASSERT_EQ(back[i], all[i]) << "dtype " << f.dtype << " pattern " << i;
    }
  }
}

// Many f32 values (weighted towards each format's range, plus uniform bit patterns) against the
// bisection reference.
TEST_F(AmpCast, RandomValuesMatchTheReferenceRounding) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<uint32_t> any;
  struct Format {
    int32_t dtype;
    double (*value)(uint16_t);
    uint16_t inf_bits;
    int lo_exp, hi_exp;
  };
  for (const Format& f : {Format{STRATA_F16, f16_exact, 0x7c00, 95, 145},
                          Format{STRATA_BF16, bf16_exact, 0x7f80, 0, 255}}) {
    std::uniform_int_distribution<uint32_t> exponent(f.lo_exp, f.hi_exp);
    std::vector<float> in;
    for (int i = 0; i < 200000; ++i) {
      uint32_t b = i % 4 == 0 ? any(rng) : (any(rng) & 0x807fffffu) | (exponent(rng) << 23);
      if (i % 3 == 0) b &= ~0xfffu;  // short mantissas: many exact ties
      if (std::isnan(from_bits(b))) continue;
      in.push_back(from_bits(b));
    }
    const std::vector<uint16_t> out = to_16(in, f.dtype);
    size_t mismatches = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const uint16_t expected = std::isinf(in[i])
                                    ? static_cast<uint16_t>((in[i] < 0 ? 0x8000 : 0) | f.inf_bits)
                                    : nearest_pattern(in[i], f.value, f.inf_bits);
      if (out[i] != expected && ++mismatches <= 5) {
        ADD_FAILURE() << "dtype " << f.dtype << std::hex << " input 0x" << bits(in[i]) << ": got 0x"
                      << out[i] << ", expected 0x" << expected;
      }
    }
    EXPECT_EQ(mismatches, 0u) << "dtype " << f.dtype << " over " << in.size() << " values";
  }
}

TEST_F(AmpCast, F32AndF64EdgeValuesRoundTrip) {
  const std::vector<float> edges = {0.0f,
                                    -0.0f,
                                    std::numeric_limits<float>::denorm_min(),
                                    -std::numeric_limits<float>::denorm_min(),
                                    FLT_MIN,
                                    FLT_MAX,
                                    -FLT_MAX,
                                    kInf,
                                    -kInf,
                                    1.0f / 3,
                                    -1e-30f,
                                    6.5e4f};
  std::vector<double> wide(edges.size());
  ASSERT_EQ(cast(edges, STRATA_F32, wide, STRATA_F64), STRATA_OK) << err_.message;
  std::vector<float> back(edges.size()), copy(edges.size());
  ASSERT_EQ(cast(wide, STRATA_F64, back, STRATA_F32), STRATA_OK) << err_.message;
  ASSERT_EQ(cast(edges, STRATA_F32, copy, STRATA_F32), STRATA_OK) << err_.message;
  for (size_t i = 0; i < edges.size(); ++i) {
    EXPECT_EQ(wide[i], static_cast<double>(edges[i])) << i;
    EXPECT_EQ(bits(back[i]), bits(edges[i])) << i;
    EXPECT_EQ(bits(copy[i]), bits(edges[i])) << i;
  }
}

TEST_F(AmpCast, F64ToF32RoundsToNearestEven) {
  const std::vector<double> in = {1.0 + std::ldexp(1.0, -24),      // tie -> 1
                                  1.0 + 3 * std::ldexp(1.0, -24),  // tie -> 1 + 2^-22
                                  1.0 + std::ldexp(1.0, -24) + std::ldexp(1.0, -40),
                                  1e300,
                                  -1e300,
                                  1e-50,
                                  -1e-50};
  std::vector<float> out(in.size());
  ASSERT_EQ(cast(in, STRATA_F64, out, STRATA_F32), STRATA_OK) << err_.message;
  EXPECT_EQ(bits(out[0]), 0x3f800000u);
  EXPECT_EQ(bits(out[1]), 0x3f800002u);
  EXPECT_EQ(bits(out[2]), 0x3f800001u);
  EXPECT_EQ(out[3], kInf);
  EXPECT_EQ(out[4], -kInf);
  EXPECT_EQ(bits(out[5]), 0x00000000u);
  EXPECT_EQ(bits(out[6]), 0x80000000u);
}

TEST_F(AmpCast, MalformedRequestsFail) {
  std::vector<float> f(4, 1.0f), f3(3);
  std::vector<uint16_t> h(4);
  std::vector<double> d(4);
  EXPECT_EQ(cast(f, STRATA_F32, f3, STRATA_F32), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err_.message).find("dst.count: expected 4 (src.count), got 3"),
            std::string::npos)
      << err_.message;
  EXPECT_EQ(cast(h, STRATA_F16, h, STRATA_BF16), STRATA_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(err_.message).find("cannot cast f16 to bf16"), std::string::npos)
      << err_.message;
  EXPECT_EQ(cast(d, STRATA_F64, h, STRATA_F16), STRATA_ERR_UNSUPPORTED);
  EXPECT_EQ(cast(f, STRATA_F32, f, STRATA_I32), STRATA_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(err_.message).find("f32 to i32"), std::string::npos) << err_.message;

  strata_buffer src = sdk::host_buffer(f.data(), 4, STRATA_F32);
  strata_buffer dst = sdk::host_buffer(nullptr, 4, STRATA_F16);
  EXPECT_EQ(amp_.ops().cast(amp_.self(), &src, &dst, &err_), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err_.message).find("dst.data"), std::string::npos) << err_.message;
  dst = sdk::host_buffer(h.data(), 4, STRATA_F16);
  dst.device = strata_device{STRATA_DEVICE_CUDA, 0};
  EXPECT_EQ(amp_.ops().cast(amp_.self(), &src, &dst, &err_), STRATA_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(err_.message).find("dst.device"), std::string::npos) << err_.message;
  EXPECT_EQ(amp_.ops().cast(amp_.self(), nullptr, &dst, &err_), STRATA_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace strata::test
