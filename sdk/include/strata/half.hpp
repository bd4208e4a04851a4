// strata/half.hpp — header-only scalar conversions between float and the 16-bit model dtypes
// (IEEE binary16 "f16" and bfloat16 "bf16"), for training hosts that keep parameters in a half
// dtype and compute in float. Round to nearest even; inf stays inf, nan stays a (quiet) nan.
// Plugins have vectorised versions; a host converts one layer at a time, where scalar is enough.
#pragma once

#include <cstdint>
#include <cstring>

namespace strata {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

inline float bf16_to_float(uint16_t h) { return bits_float(uint32_t{h} << 16); }

inline uint16_t float_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // nan
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);  // ties to even
  return static_cast<uint16_t>((u + rounding) >> 16);
}

inline float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));  // inf, nan
  if (exponent != 0) return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa × 2^-24, exact in float.
  const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
  return sign != 0 ? -magnitude : magnitude;
}

inline uint16_t float_to_f16(float f) {
  const uint32_t u = float_bits(f);
  const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {
    // Below the smallest normal half (2^-14): the result is subnormal (or zero). Adding 0.5
    // aligns the mantissa so the float addition itself rounds to nearest even at 2^-24.
    const float shifted = bits_float(abs) + 0.5f;
    return static_cast<uint16_t>(sign | (float_bits(shifted) - float_bits(0.5f)));
  }
  const uint32_t odd = (abs >> 13) & 1u;
  const uint32_t rebased = abs - (uint32_t{112} << 23) + 0xfffu + odd;  // ties to even
  return static_cast<uint16_t>(sign | (rebased >> 13));
}

}  // namespace strata
