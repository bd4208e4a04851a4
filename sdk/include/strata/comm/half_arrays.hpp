// strata/comm/half_arrays.hpp — header-only whole-array f16 / bf16 <-> f32 conversions for comm
// plugins whose half-precision reductions accumulate in f32 (widen, reduce, narrow once). Element
// by element through the SDK's scalar conversions (strata/half.hpp): round to nearest, ties to
// even; inf stays inf, NaN stays a NaN with its sign. C++17 or later.
#pragma once

#include <strata/half.hpp>
#include <strata/plugin_api.h>

#include <cstddef>
#include <cstdint>

namespace strata::sdk::comm {

// f16 -> f32 as IEEE widening does it: a signalling NaN comes out quiet (the SDK's scalar keeps
// the NaN's bits as they are), so the f32 values reduced are those of a hardware conversion.
// Pure; thread-safe.
inline float widen_f16(uint16_t bits) {
  const float value = f16_to_float(bits);
  return value != value ? bits_float(float_bits(value) | 0x400000u) : value;
}

// dst[i] = src[i] widened, for `count` elements; `dtype` is STRATA_F16 or STRATA_BF16 (anything
// else is read as f16). `src` holds `count` 16-bit elements, `dst` room for `count` floats; the two
// must not overlap. Thread-safe on disjoint buffers.
inline void half_to_f32(int32_t dtype, const void* src, float* dst, size_t count) {
  const auto* in = static_cast<const uint16_t*>(src);
  if (dtype == STRATA_BF16) {
    for (size_t i = 0; i < count; ++i) dst[i] = bf16_to_float(in[i]);
  } else {
    for (size_t i = 0; i < count; ++i) dst[i] = widen_f16(in[i]);
  }
}

// dst[i] = src[i] narrowed (round to nearest even), for `count` elements; `dtype` as above. The
// buffers must not overlap. Thread-safe on disjoint buffers.
inline void f32_to_half(int32_t dtype, const float* src, void* dst, size_t count) {
  auto* out = static_cast<uint16_t*>(dst);
  if (dtype == STRATA_BF16) {
    for (size_t i = 0; i < count; ++i) out[i] = float_to_bf16(src[i]);
  } else {
    for (size_t i = 0; i < count; ++i) out[i] = float_to_f16(src[i]);
  }
}

}  // namespace strata::sdk::comm
