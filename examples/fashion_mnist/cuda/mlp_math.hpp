// The per-element math of the GPU host's kernels, as __host__ __device__ functions: the kernels in
// kernels.cu call them on the device, and tests/gpu_example/mlp_math_test.cpp calls the very same
// functions on the CPU and compares them with the CPU host's code (mlp.cpp, runtime_layers.cpp,
// strata/half.hpp), so the math is tested on machines without a GPU. Each function does the CPU
// host's operations in the CPU host's order, so that both hosts agree to rounding of the GEMMs.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define STRATA_HD __host__ __device__
#else
#define STRATA_HD
#endif

#if defined(__CUDA_ARCH__)
#define STRATA_MATH_EXP ::exp
#define STRATA_MATH_LOG ::log
#else
#include <cmath>
#define STRATA_MATH_EXP std::exp
#define STRATA_MATH_LOG std::log
#endif

namespace strata::fmnist::math {

// ---- f16 / bf16 bits <-> float: strata/half.hpp's conversions (round to nearest even), which are
// host-only; the test checks these against them on every half value and on rounding boundaries.

STRATA_HD inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}

STRATA_HD inline float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

STRATA_HD inline float bf16_to_float(uint16_t h) { return bits_float(uint32_t{h} << 16); }

STRATA_HD inline uint16_t float_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // nan
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);  // ties to even
  return static_cast<uint16_t>((u + rounding) >> 16);
}

STRATA_HD inline float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));  // inf, nan
  if (exponent != 0) return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
  const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;  // subnormal
  return sign != 0 ? -magnitude : magnitude;
}

STRATA_HD inline uint16_t float_to_f16(float f) {
  const uint32_t u = float_bits(f);
  const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {
    const float shifted = bits_float(abs) + 0.5f;  // the float addition rounds at 2^-24
    return static_cast<uint16_t>(sign | (float_bits(shifted) - float_bits(0.5f)));
  }
  const uint32_t odd = (abs >> 13) & 1u;
  const uint32_t rebased = abs - (uint32_t{112} << 23) + 0xfffu + odd;  // ties to even
  return static_cast<uint16_t>(sign | (rebased >> 13));
}

STRATA_HD inline float half_to_float(uint16_t h, bool bf16) {
  return bf16 ? bf16_to_float(h) : f16_to_float(h);
}

STRATA_HD inline uint16_t float_to_half(float f, bool bf16) {
  return bf16 ? float_to_bf16(f) : float_to_f16(f);
}

// A half model's gradient element after this micro-batch's f32 gradient `add` is added into it
// (RuntimeLayers::add_grad_into).
STRATA_HD inline uint16_t accumulate_half(uint16_t grad, float add, bool bf16) {
  return float_to_half(half_to_float(grad, bf16) + add, bf16);
}

// ---- the MLP's layers (Mlp::forward, Mlp::train_batch) ----

// std::max(v, 0.0f), NaN and -0 included.
STRATA_HD inline float relu(float v) { return v < 0.0f ? 0.0f : v; }

// The gradient through ReLU given the layer's post-ReLU output.
STRATA_HD inline float relu_backward(float delta, float activation) {
  return activation <= 0.0f ? 0.0f : delta;
}

// bias_grad[column] += delta[i][column] for i = 0 .. n-1, in that order (the CPU host's loop).
STRATA_HD inline float bias_grad_column(float grad, const float* delta, uint64_t n,
                                        uint64_t columns, uint64_t column) {
  for (uint64_t i = 0; i < n; ++i) grad += delta[i * columns + column];
  return grad;
}

// The index of the row's first largest element (std::max_element).
STRATA_HD inline int argmax_row(const float* row, int classes) {
  int best = 0;
  for (int j = 1; j < classes; ++j) {
    if (row[best] < row[j]) best = j;
  }
  return best;
}

// One row of softmax_cross_entropy (mlp.cpp): returns the row's loss (log Σ exp − logit of the
// label, in double); when `drow` is non-null writes scale × (softmax − onehot) into it.
STRATA_HD inline double softmax_xent_row(const float* row, int classes, int label, float scale,
                                         float* drow) {
  const float max = row[argmax_row(row, classes)];  // subtract for stability
  double sum = 0.0;
  for (int j = 0; j < classes; ++j) sum += STRATA_MATH_EXP(static_cast<double>(row[j] - max));
  const double log_sum = STRATA_MATH_LOG(sum);
  if (drow != nullptr) {
    for (int j = 0; j < classes; ++j) {
      const double p = STRATA_MATH_EXP(static_cast<double>(row[j] - max) - log_sum);
      drow[j] = static_cast<float>(p - (j == label ? 1.0 : 0.0)) * scale;
    }
  }
  return log_sum - static_cast<double>(row[label] - max);
}

}  // namespace strata::fmnist::math
