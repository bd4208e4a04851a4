// The GPU host's small kernels: one thread per element (per row for the softmax and the accuracy,
// per column for the bias gradient). The model is small, so these are latency-bound launches; the
// point is the same math as the CPU host's on the device, not peak bandwidth.
#include "kernels.hpp"

#include <stdexcept>
#include <string>

#include "mlp_math.hpp"

namespace strata::fmnist::cuda {
namespace {

constexpr unsigned kThreads = 256;

unsigned blocks_for(uint64_t count) {
  return static_cast<unsigned>((count + kThreads - 1) / kThreads);
}

// Launch errors (bad configuration, no device) surface here, with the kernel's name; errors while
// a kernel runs surface at the stream's next synchronisation.
void check_launch(const char* kernel) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA kernel ") + kernel + " failed to launch: " +
                             cudaGetErrorString(status));
  }
}

__global__ void broadcast_bias_kernel(float* z, const float* bias, uint64_t count, uint64_t out) {
  const uint64_t k = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < count) z[k] = bias[k % out];
}

__global__ void relu_kernel(float* v, uint64_t count) {
  const uint64_t k = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < count) v[k] = math::relu(v[k]);
}

__global__ void relu_backward_kernel(float* delta, const float* activation, uint64_t count) {
  const uint64_t k = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < count) delta[k] = math::relu_backward(delta[k], activation[k]);
}

__global__ void bias_grad_kernel(float* bias_grad, const float* delta, uint64_t n, uint64_t out) {
  const uint64_t j = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < out) bias_grad[j] = math::bias_grad_column(bias_grad[j], delta, n, out, j);
}

__global__ void softmax_xent_kernel(const float* logits, const uint8_t* labels, uint64_t n,
                                    int classes, float scale, double* row_loss, float* dlogits) {
  const uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float* drow = dlogits != nullptr ? dlogits + i * uint64_t(classes) : nullptr;
  row_loss[i] = math::softmax_xent_row(logits + i * uint64_t(classes), classes, labels[i], scale,
                                       drow);
}

__global__ void count_correct_kernel(const float* logits, const uint8_t* labels, uint64_t n,
                                     int classes, unsigned long long* correct) {
  const uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n && math::argmax_row(logits + i * uint64_t(classes), classes) == labels[i]) {
    atomicAdd(correct, 1ull);
  }
}

}  // namespace

void broadcast_bias(float* z, const float* bias, uint64_t n, uint64_t out, cudaStream_t stream) {
  if (n * out == 0) return;
  broadcast_bias_kernel<<<blocks_for(n * out), kThreads, 0, stream>>>(z, bias, n * out, out);
  check_launch("broadcast_bias");
}

void relu(float* v, uint64_t count, cudaStream_t stream) {
  if (count == 0) return;
  relu_kernel<<<blocks_for(count), kThreads, 0, stream>>>(v, count);
  check_launch("relu");
}

void relu_backward(float* delta, const float* activation, uint64_t count, cudaStream_t stream) {
  if (count == 0) return;
  relu_backward_kernel<<<blocks_for(count), kThreads, 0, stream>>>(delta, activation, count);
  check_launch("relu_backward");
}

void add_bias_grad(float* bias_grad, const float* delta, uint64_t n, uint64_t out,
                   cudaStream_t stream) {
  if (out == 0) return;
  bias_grad_kernel<<<blocks_for(out), kThreads, 0, stream>>>(bias_grad, delta, n, out);
  check_launch("add_bias_grad");
}

void softmax_xent(const float* logits, const uint8_t* labels, uint64_t n, int classes, float scale,
                  double* row_loss, float* dlogits, cudaStream_t stream) {
  if (n == 0) return;
  softmax_xent_kernel<<<blocks_for(n), kThreads, 0, stream>>>(logits, labels, n, classes, scale,
                                                              row_loss, dlogits);
  check_launch("softmax_xent");
}

void count_correct(const float* logits, const uint8_t* labels, uint64_t n, int classes,
                   unsigned long long* correct, cudaStream_t stream) {
  if (n == 0) return;
  count_correct_kernel<<<blocks_for(n), kThreads, 0, stream>>>(logits, labels, n, classes,
                                                               correct);
  check_launch("count_correct");
}

}  // namespace strata::fmnist::cuda
