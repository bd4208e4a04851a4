#include "float_convert.hpp"

#include <bit>

namespace strata::amp {
namespace {

constexpr uint32_t kF32ExpMask = 0x7f800000u;
constexpr uint32_t kF32AbsMask = 0x7fffffffu;

// Shifts `value` right by `shift` (1..31) bits, rounding to nearest with ties to even.
constexpr uint32_t shift_right_rne(uint32_t value, unsigned shift) {
  const uint32_t kept = value >> shift;
  const uint32_t rest = value & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

uint16_t f32_to_f16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & kF32AbsMask;
  if (abs > kF32ExpMask) {  // nan: keep the top payload bits, force the quiet bit
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  // 65520 = halfway between f16 max (65504) and 2^16: it and everything above round to inf.
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs >= 0x38800000u) {  // normal in f16 (>= 2^-14): rebias exponent 127 -> 15
    // Rounding may carry into the exponent, which is still the right answer (incl. max -> inf
    // handled above).
    return static_cast<uint16_t>(sign | shift_right_rne(abs - 0x38000000u, 13));
  }
  // f16 subnormal or zero: the value in units of 2^-24 is mantissa * 2^(exp - 150 + 24).
  const uint32_t exp = abs >> 23;
  if (exp < 102) return sign;  // below 2^-25 (half the smallest subnormal): rounds to 0
  const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
  return static_cast<uint16_t>(sign | shift_right_rne(mantissa, 126u - exp));
}

float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | kF32ExpMask | (mantissa << 13));
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24 is exact in fp32.
  const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
  return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
}

uint16_t f32_to_bf16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & kF32AbsMask) > kF32ExpMask) {  // nan: truncate, force the quiet bit
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  }
  // Adding 0x7fff plus the lowest kept bit rounds to nearest even; a carry out of the mantissa
  // correctly bumps the exponent (and the largest values to inf).
  const uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

float bf16_bits_to_f32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

}  // namespace

void f32_to_f16(const float* src, uint16_t* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = f32_to_f16_bits(src[i]);
}
void f16_to_f32(const uint16_t* src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = f16_bits_to_f32(src[i]);
}
void f32_to_bf16(const float* src, uint16_t* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = f32_to_bf16_bits(src[i]);
}
void bf16_to_f32(const uint16_t* src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_f32(src[i]);
}
void f32_to_f64(const float* src, double* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<double>(src[i]);
}
void f64_to_f32(const double* src, float* dst, std::size_t n) {
  // The hardware conversion rounds to nearest even (the default mode), overflows to inf, keeps nan.
  for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

}  // namespace strata::amp
