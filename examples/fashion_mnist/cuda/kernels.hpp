// Launchers of the GPU host's small kernels (the GEMMs are cuBLAS's). Each enqueues on `stream`
// and returns at once; the per-element math is mlp_math.hpp's. Sizes are element counts.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace strata::fmnist::cuda {

// z[i][j] = bias[j] for every row i < n of z (n × out): the GEMM then adds input · W (beta = 1).
void broadcast_bias(float* z, const float* bias, uint64_t n, uint64_t out, cudaStream_t stream);

// v = max(v, 0) over count elements.
void relu(float* v, uint64_t count, cudaStream_t stream);

// delta[k] = 0 where activation[k] <= 0.
void relu_backward(float* delta, const float* activation, uint64_t count, cudaStream_t stream);

// bias_grad[j] += Σ_i delta[i][j] (delta n × out, rows summed in order).
void add_bias_grad(float* bias_grad, const float* delta, uint64_t n, uint64_t out,
                   cudaStream_t stream);

// Per row of logits (n × classes): row_loss[i] = the row's cross-entropy; when dlogits is non-null,
// dlogits = scale × (softmax − onehot(labels)).
void softmax_xent(const float* logits, const uint8_t* labels, uint64_t n, int classes, float scale,
                  double* row_loss, float* dlogits, cudaStream_t stream);

// *correct += the number of rows whose arg-max equals the label.
void count_correct(const float* logits, const uint8_t* labels, uint64_t n, int classes,
                   unsigned long long* correct, cudaStream_t stream);

}  // namespace strata::fmnist::cuda
