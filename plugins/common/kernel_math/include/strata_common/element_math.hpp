// strata_common/element_math.hpp — the per-element arithmetic of the CUDA kernels
// (strata_common/cuda/kernels.hpp), as functions that compile for the host (g++) and the device (nvcc) alike, so that CPU tests check
// the very code the kernels run even where no GPU is present.
//
// Each function restates one CPU reference operation for operation:
//  - conversions: the amp plugin's scalar:: conversions (plugins/amp/src/kernels.hpp), i.e.
//    strata/half.hpp's narrowing, and widening that quiets a signalling nan;
//  - optimizer updates: the offload plugin's kernels (plugins/offload/src/optimizer_kernels.cpp),
//    with fmaf exactly where they use MulAdd/NegMulAdd. Device sqrtf and division are IEEE
//    round-to-nearest (nvcc's default -prec-sqrt/-prec-div; never build with -use_fast_math), so
//    host and device give the same bits; the CPU plugin's vector paths differ from both only by
//    whether their MulAdd fuses.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include <strata_common/optimizer_scalars.hpp>

#if defined(__CUDACC__)
#define STRATA_HOST_DEVICE __host__ __device__
#else
#define STRATA_HOST_DEVICE
#endif

namespace strata::cuda::math {

using common::optim::AdamScalars;
using common::optim::LionScalars;
using common::optim::SgdScalars;

// ---- bits ------------------------------------------------------------------------------------

STRATA_HOST_DEVICE inline uint32_t bits_of(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
#endif
}

STRATA_HOST_DEVICE inline float float_of(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

inline constexpr uint32_t kExpMask = 0x7f800000u;
inline constexpr uint32_t kAbsMask = 0x7fffffffu;
inline constexpr uint32_t kQuietBit = 0x00400000u;

STRATA_HOST_DEVICE inline bool is_finite(float f) { return (bits_of(f) & kExpMask) != kExpMask; }

// ---- conversions (bit for bit strata/half.hpp and amp's scalar::) ------------------------------

STRATA_HOST_DEVICE inline float quieted(float f) {
  const uint32_t u = bits_of(f);
  return (u & kAbsMask) > kExpMask ? float_of(u | kQuietBit) : f;
}

STRATA_HOST_DEVICE inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = bits_of(f);
  if ((u & kAbsMask) > kExpMask) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // nan
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);  // ties to even
  return static_cast<uint16_t>((u + rounding) >> 16);
}

STRATA_HOST_DEVICE inline float bf16_to_f32(uint16_t h) {
  return quieted(float_of(static_cast<uint32_t>(h) << 16));
}

STRATA_HOST_DEVICE inline uint16_t f32_to_f16(float f) {
  const uint32_t u = bits_of(f);
  const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & kAbsMask;
  if (abs > kExpMask) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {
    // Subnormal or zero: adding 0.5 aligns the mantissa so that the float addition itself
    // rounds to nearest even at 2^-24 (the device adds in round-to-nearest as the host does).
    const float shifted = float_of(abs) + 0.5f;
    return static_cast<uint16_t>(sign | (bits_of(shifted) - bits_of(0.5f)));
  }
  const uint32_t odd = (abs >> 13) & 1u;
  const uint32_t rebased = abs - (uint32_t{112} << 23) + 0xfffu + odd;  // ties to even
  return static_cast<uint16_t>(sign | (rebased >> 13));
}

STRATA_HOST_DEVICE inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return quieted(float_of(sign | kExpMask | (mantissa << 13)));
  if (exponent != 0) return float_of(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24, exact in float.
  const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
  return sign != 0 ? -magnitude : magnitude;
}

// Storage types: a tag per dtype with load (to f32) and store (from f32).
struct F32 {
  using Storage = float;
  STRATA_HOST_DEVICE static float load(float x) { return x; }
  STRATA_HOST_DEVICE static float store(float x) { return x; }
};
struct F16 {
  using Storage = uint16_t;
  STRATA_HOST_DEVICE static float load(uint16_t x) { return f16_to_f32(x); }
  STRATA_HOST_DEVICE static uint16_t store(float x) { return f32_to_f16(x); }
};
struct BF16 {
  using Storage = uint16_t;
  STRATA_HOST_DEVICE static float load(uint16_t x) { return bf16_to_f32(x); }
  STRATA_HOST_DEVICE static uint16_t store(float x) { return f32_to_bf16(x); }
};

// ---- elementwise helpers ----------------------------------------------------------------------

STRATA_HOST_DEVICE inline float accumulated(float dst, float src) { return dst + src; }
STRATA_HOST_DEVICE inline float scaled(float x, float s) { return x * s; }

// The square of one gradient element in fp64 (exact for any float) and whether it is finite.
STRATA_HOST_DEVICE inline double square(float x) {
  const double d = x;
  return d * d;
}

// ---- optimizer updates (offload's AdamOp, SgdOp, LionOp) ----------------------------------------

// One Adam/AdamW element: x the fp32 master, g_raw the gradient as stored (widened to f32), m
// and v the state. Returns the new parameter (also written to x).
STRATA_HOST_DEVICE inline float adam_update(const AdamScalars& s, float& x, float g_raw, float& m,
                                            float& v) {
  const float g = fmaf(s.l2_decay, x, g_raw * s.grad_scale);
  m = fmaf(s.beta1, m, s.one_minus_beta1 * g);
  v = fmaf(s.beta2, v, (s.one_minus_beta2 * g) * g);
  const float denom = fmaf(sqrtf(v), s.inv_sqrt_bc2, s.eps);
  const float update = s.step_size * (m / denom);
  x = x - fmaf(s.param_decay, x, update);
  return x;
}

// One SGD element without momentum (the buffer is NULL).
STRATA_HOST_DEVICE inline float sgd_update_plain(const SgdScalars& s, float& x, float g_raw) {
  const float g = fmaf(s.weight_decay, x, g_raw * s.grad_scale);
  x = fmaf(-s.lr, g, x);
  return x;
}

// One SGD element with a momentum buffer (nesterov per s.nesterov).
STRATA_HOST_DEVICE inline float sgd_update_momentum(const SgdScalars& s, float& x, float g_raw,
                                                    float& buf) {
  const float g = fmaf(s.weight_decay, x, g_raw * s.grad_scale);
  buf = fmaf(s.buf_keep, buf, s.grad_keep * g);
  const float update = s.nesterov ? fmaf(s.momentum, buf, g) : buf;
  x = fmaf(-s.lr, update, x);
  return x;
}

// torch.sign: +1, -1, 0 for zero (keeping its sign bit), nan stays nan.
STRATA_HOST_DEVICE inline float sign_of(float c) {
  return c > 0.0f ? 1.0f : (c < 0.0f ? -1.0f : c);
}

// One Lion element.
STRATA_HOST_DEVICE inline float lion_update(const LionScalars& s, float& x, float g_raw, float& m) {
  const float g = g_raw * s.grad_scale;
  const float c = fmaf(s.beta1, m, s.one_minus_beta1 * g);
  const float update = s.lr * sign_of(c);
  x = x - fmaf(s.param_decay, x, update);
  m = fmaf(s.beta2, m, s.one_minus_beta2 * g);
  return x;
}

}  // namespace strata::cuda::math
