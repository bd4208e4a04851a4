// The tests' own IEEE binary16 conversions, written apart from the code under test (the SDK's
// strata/half.hpp and the plugins' vector kernels), for expected values: widening is exact, and
// narrowing from double rounds once, to nearest even. They stand in for the compiler's _Float16,
// which clang before 15 lacks on x86. NaNs come out quiet, as x86's conversions make them.
#pragma once

#include <algorithm>
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

// The f16 nearest to x (ties to even), rounded once, as bits.
inline uint16_t f16_nearest(double x) {
  const uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
  if (std::isnan(x)) {  // quiet, with the top of the payload (as x86's float conversion keeps it)
    const uint32_t f = std::bit_cast<uint32_t>(static_cast<float>(x));
    return static_cast<uint16_t>(sign | 0x7e00u | ((f >> 13) & 0x3ffu));
  }
  const double magnitude = std::fabs(x);
  if (std::isinf(magnitude)) return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude == 0) return sign;
  int e = 0;
  std::frexp(magnitude, &e);              // magnitude in [2^(e-1), 2^e)
  int exponent = std::max(e - 1, -14);    // below 2^-14: subnormal, in units of 2^-24
  // Exact scaling by a power of two; nearbyint rounds to nearest even (the default mode).
  double units = std::nearbyint(std::ldexp(magnitude, 10 - exponent));
  if (units >= 2048) {  // rounded up into the next binade
    units /= 2;
    ++exponent;
  }
  if (exponent > 15) return static_cast<uint16_t>(sign | 0x7c00u);
  const auto u = static_cast<uint16_t>(units);
  if (u < 1024) return static_cast<uint16_t>(sign | u);  // subnormal (exponent is -14)
  return static_cast<uint16_t>(sign | ((exponent + 15) << 10) | (u - 1024));
}

}  // namespace strata::test
