#include "half.hpp"

#include <strata/plugin_api.h>

#include <bit>

namespace strata::allreduce_mpi {
namespace {

// Rounds `value >> shift` to nearest, ties to even (shift >= 1).
uint32_t shift_round_even(uint32_t value, unsigned shift) {
  const uint32_t kept = value >> shift;
  const uint32_t rest = value & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  return kept + ((rest > halfway || (rest == halfway && (kept & 1u))) ? 1u : 0u);
}

}  // namespace

uint16_t f32_to_f16(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {  // NaN: keep it quiet and keep the top payload bits
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 -> inf
  const uint32_t exponent = magnitude >> 23;
  if (exponent < 113) {  // below 2^-14: an f16 subnormal (or zero), units of 2^-24
    const unsigned shift = 126u - exponent;
    if (shift > 24u) return sign;  // below 2^-25 (or exactly it, a tie to even 0)
    const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    return static_cast<uint16_t>(sign | shift_round_even(mantissa, shift));
  }
  // Normal: rebias the exponent; a carry out of the mantissa correctly bumps the exponent.
  const uint32_t rebased = ((exponent - 112u) << 23) | (magnitude & 0x7fffffu);
  return static_cast<uint16_t>(sign | shift_round_even(rebased, 13));
}

float f16_to_f32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in f32
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) {  // inf, or NaN made quiet as IEEE conversions do
    const uint32_t quiet = mantissa != 0 ? 0x400000u : 0u;
    return std::bit_cast<float>(sign | 0x7f800000u | quiet | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t f32_to_bf16(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float bf16_to_f32(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

void half_to_f32(int32_t dtype, const void* src, float* dst, size_t count) {
  const auto* in = static_cast<const uint16_t*>(src);
  if (dtype == STRATA_BF16) {
    for (size_t i = 0; i < count; ++i) dst[i] = bf16_to_f32(in[i]);
  } else {
    for (size_t i = 0; i < count; ++i) dst[i] = f16_to_f32(in[i]);
  }
}

void f32_to_half(int32_t dtype, const float* src, void* dst, size_t count) {
  auto* out = static_cast<uint16_t*>(dst);
  if (dtype == STRATA_BF16) {
    for (size_t i = 0; i < count; ++i) out[i] = f32_to_bf16(src[i]);
  } else {
    for (size_t i = 0; i < count; ++i) out[i] = f32_to_f16(src[i]);
  }
}

}  // namespace strata::allreduce_mpi
