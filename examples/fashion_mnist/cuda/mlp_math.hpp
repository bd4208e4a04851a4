// The per-element math of the GPU host's kernels, as __host__ __device__ functions: the kernels in
// kernels.cu call them on the device, and tests/gpu_example/mlp_math_test.cpp calls the very same
// functions on the CPU and compares them with the CPU host's code (mlp.cpp), so the math is tested
// on machines without a GPU. Each function does the CPU host's operations in the CPU host's order,
// so that both hosts agree to rounding of the GEMMs. The half-precision casts and the accumulation
// of f32 gradients into half ones are the SDK's (strata_common/cuda/kernels.hpp, element_math.hpp).
#pragma once

#include <cstdint>

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
