// The CPU host's three row-major products (mlp.cpp) as column-major GEMMs, cuBLAS's convention,
// without any CUDA type, so that tests/gpu_example checks the transposes and leading dimensions on
// the CPU. A row-major r × c matrix is a column-major c × r one, so C = A·B row-major is
// Cᵀ = Bᵀ·Aᵀ column-major: the operands swap places and keep their leading dimensions.
#pragma once

#include <cstddef>

namespace strata::fmnist::cuda {

enum class Op { none, transpose };

// C (m × n) = op(A) (m × k) · op(B) (k × n) + beta × C, column-major, alpha 1.
struct ColumnMajorGemm {
  Op op_a, op_b;
  int m, n, k;
  const float* a;
  int lda;
  const float* b;
  int ldb;
  float beta;
  float* c;
  int ldc;
};

// z (samples × out) += x (samples × in) · W (in × out)
inline ColumnMajorGemm forward_gemm(const float* x, const float* w, float* z, std::size_t samples,
                                    std::size_t in, std::size_t out) {
  const int n = int(samples), i = int(in), o = int(out);
  return {Op::none, Op::none, o, n, i, w, o, x, i, 1.0f, z, o};
}

// dW (in × out) += xᵀ (in × samples) · delta (samples × out)
inline ColumnMajorGemm weight_grad_gemm(const float* x, const float* delta, float* dw,
                                        std::size_t samples, std::size_t in, std::size_t out) {
  const int n = int(samples), i = int(in), o = int(out);
  return {Op::none, Op::transpose, o, i, n, delta, o, x, i, 1.0f, dw, o};
}

// delta_prev (samples × in) = delta (samples × out) · Wᵀ (out × in)
inline ColumnMajorGemm input_grad_gemm(const float* delta, const float* w, float* delta_prev,
                                       std::size_t samples, std::size_t in, std::size_t out) {
  const int n = int(samples), i = int(in), o = int(out);
  return {Op::transpose, Op::none, i, n, o, w, o, delta, o, 0.0f, delta_prev, i};
}

}  // namespace strata::fmnist::cuda
