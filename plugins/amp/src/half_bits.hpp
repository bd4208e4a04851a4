// One-element conversions between fp32 and the 16-bit formats, on raw bit patterns: round to
// nearest with ties to even, inf preserved, nan stays nan with its sign and is made quiet.
// The portable definition every vector path must reproduce bit for bit (their tails use it too).
#pragma once

#include <bit>
#include <cstdint>

namespace strata::amp::bits {

inline constexpr uint32_t kF32ExpMask = 0x7f800000u;
inline constexpr uint32_t kF32AbsMask = 0x7fffffffu;
inline constexpr uint32_t kF32QuietBit = 0x00400000u;

// Shifts `value` right by `shift` (1..31) bits, rounding to nearest with ties to even.
constexpr uint32_t shift_right_rne(uint32_t value, unsigned shift) {
  const uint32_t kept = value >> shift;
  const uint32_t rest = value & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

constexpr uint16_t f32_to_f16(uint32_t x) {
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & kF32AbsMask;
  if (abs > kF32ExpMask) {  // nan: keep the top payload bits, force the quiet bit
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  // 65520 = halfway between f16 max (65504) and 2^16: it and everything above round to inf.
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs >= 0x38800000u) {  // normal in f16 (>= 2^-14): rebias exponent 127 -> 15
    // A carry out of the mantissa correctly bumps the exponent.
    return static_cast<uint16_t>(sign | shift_right_rne(abs - 0x38000000u, 13));
  }
  // f16 subnormal or zero: the value in units of 2^-24 is mantissa * 2^(exp - 150 + 24).
  const uint32_t exp = abs >> 23;
  if (exp < 102) return sign;  // below 2^-25 (half the smallest subnormal): rounds to 0
  const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
  return static_cast<uint16_t>(sign | shift_right_rne(mantissa, 126u - exp));
}

constexpr uint32_t f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exp == 0x1f) {
    return mantissa == 0 ? sign | kF32ExpMask
                         : sign | kF32ExpMask | kF32QuietBit | (mantissa << 13);
  }
  if (exp != 0) return sign | ((exp + 112u) << 23) | (mantissa << 13);
  if (mantissa == 0) return sign;
  // Subnormal: normalise. mantissa * 2^-24 with the leading one at bit `top` is
  // 2^(top - 24) * 1.f, so the fp32 exponent field is top - 24 + 127.
  const unsigned top = 31u - static_cast<unsigned>(std::countl_zero(mantissa));
  const uint32_t fraction = (mantissa << (23u - top)) & 0x7fffffu;
  return sign | ((top + 103u) << 23) | fraction;
}

constexpr uint16_t f32_to_bf16(uint32_t x) {
  if ((x & kF32AbsMask) > kF32ExpMask) {  // nan: truncate, force the quiet bit
    return static_cast<uint16_t>((x | kF32QuietBit) >> 16);
  }
  // Adding 0x7fff plus the lowest kept bit rounds to nearest even; a carry out of the mantissa
  // correctly bumps the exponent (and the largest values to inf).
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

constexpr uint32_t bf16_to_f32(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  return (x & kF32AbsMask) > kF32ExpMask ? x | kF32QuietBit : x;
}

}  // namespace strata::amp::bits
