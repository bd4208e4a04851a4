// The tests' own 16-bit float references, written apart from the code under test (the SDK's
// strata/half.hpp and the plugins' vector kernels), for expected values: widening is exact, and
// narrowing from double rounds once, to nearest even, by a search over the patterns (not by bit
// arithmetic like the code under test). The f16 ones stand in for the compiler's _Float16, which
// clang before 15 lacks on x86; NaNs come out quiet, as x86's conversions make them.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace strata::test {

// f16 `bits` as float bits.
inline uint32_t f16_to_f32_bits(uint16_t bits) {
  const uint32_t sign = uint32_t{bits & 0x8000u} << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) {
    return sign | 0x7f800000u | (mantissa == 0 ? 0u : 0x400000u | (mantissa << 13));
  }
  if (exponent == 0) {  // zero or subnormal: mantissa x 2^-24, exact in float
    return sign | std::bit_cast<uint32_t>(std::ldexp(static_cast<float>(mantissa), -24));
  }
  return sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
}

inline float f16_to_float(uint16_t bits) { return std::bit_cast<float>(f16_to_f32_bits(bits)); }

// Exact values of the 16-bit formats, from their definitions. The all-ones exponent with a zero
// mantissa decodes to the power of two just past the largest finite value: rounding treats inf
// as that number (NaN patterns are not values here).
inline double f16_exact(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}
inline double bf16_exact(uint16_t h) {
  const int e = (h >> 7) & 0xff, m = h & 0x7f;
  const double v = e == 0 ? std::ldexp(m, -133) : std::ldexp(128 + m, e - 134);
  return (h & 0x8000) ? -v : v;
}

// The 16-bit pattern nearest to finite x, ties to the even pattern, by bisection over the ordered
// positive patterns [0, inf_bits] of the format `value` decodes.
inline uint16_t nearest_pattern(double x, double (*value)(uint16_t), uint16_t inf_bits) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  if (a >= value(inf_bits)) return static_cast<uint16_t>(sign | inf_bits);
  uint16_t lo = 0, hi = inf_bits;  // value(lo) <= a < value(hi)
  while (hi - lo > 1) {
    const auto mid = static_cast<uint16_t>((lo + hi) / 2);
    (value(mid) <= a ? lo : hi) = mid;
  }
  const double halfway = (value(lo) + value(hi)) / 2;  // exact: both have <= 11 significant bits
  const uint16_t pick = a < halfway ? lo : a > halfway ? hi : (lo % 2 == 0 ? lo : hi);
  return static_cast<uint16_t>(sign | pick);
}

// The f16 nearest to x (ties to even), rounded once from double, as bits.
inline uint16_t f16_nearest(double x) {
  if (std::isnan(x)) {  // quiet, with the top of the payload (as x86's float conversion keeps it)
    const uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
    const uint32_t f = std::bit_cast<uint32_t>(static_cast<float>(x));
    return static_cast<uint16_t>(sign | 0x7e00u | ((f >> 13) & 0x3ffu));
  }
  return nearest_pattern(x, f16_exact, 0x7c00);
}

}  // namespace strata::test
