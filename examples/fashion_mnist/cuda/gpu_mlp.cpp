#include "gpu_mlp.hpp"

#include <stdexcept>
#include <utility>

#include "gemm_shapes.hpp"
#include "kernels.hpp"

namespace strata::fmnist::cuda {
namespace {

int to_int(std::size_t n) { return static_cast<int>(n); }

cublasOperation_t to_cublas(Op op) { return op == Op::transpose ? CUBLAS_OP_T : CUBLAS_OP_N; }

// Full f32 math (the handle's default math mode, no TF32), as the CPU host's sgemm.
void run(cublasHandle_t blas, const ColumnMajorGemm& g) {
  const float one = 1.0f;
  check(cublasSgemm(blas, to_cublas(g.op_a), to_cublas(g.op_b), g.m, g.n, g.k, &one, g.a, g.lda,
                    g.b, g.ldb, &g.beta, g.c, g.ldc),
        "cublasSgemm");
}

}  // namespace

GpuMlp::GpuMlp(std::vector<std::size_t> sizes, LayerAccess& access, cudaStream_t stream)
    : sizes_(std::move(sizes)), access_(access), stream_(stream) {
  if (sizes_.size() < 2) throw std::invalid_argument("GpuMlp: need at least input and output sizes");
  check(cublasCreate(&blas_), "cublasCreate");
  check(cublasSetStream(blas_, stream_), "cublasSetStream");
  check(cudaEventCreateWithFlags(&loss_ready_, cudaEventDisableTiming), "cudaEventCreate");
  activations_.resize(layers());
  correct_.resize(1);
  host_correct_.resize(1);
}

GpuMlp::~GpuMlp() {
  cudaEventDestroy(loss_ready_);
  cublasDestroy(blas_);
}

void GpuMlp::upload(const float* x, const uint8_t* y, std::size_t n) {
  x_.resize(n * inputs());
  y_.resize(n);
  if (n == 0) return;
  // From pageable memory (the data reader's vectors): the copy is staged by the driver and the
  // host buffers may be reused as soon as the calls return.
  check(cudaMemcpyAsync(x_.data(), x, x_.bytes(), cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync (inputs)");
  check(cudaMemcpyAsync(y_.data(), y, y_.bytes(), cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync (labels)");
}

const float* GpuMlp::layer_input(std::size_t layer) const {
  return layer == 0 ? x_.data() : activations_[layer - 1].data();
}

void GpuMlp::forward(std::size_t n) {
  for (std::size_t l = 0; l < layers(); ++l) {
    const std::size_t in = sizes_[l], out = sizes_[l + 1];
    auto& z = activations_[l];
    z.resize(n * out);
    const LayerBuffers p = access_.begin(l, false);
    broadcast_bias(z.data(), p.bias, n, out, stream_);
    // z (n × out) += input (n × in) · W (in × out)
    if (n > 0) run(blas_, forward_gemm(layer_input(l), p.weight, z.data(), n, in, out));
    access_.end(l, false);
    if (l + 1 < layers()) relu(z.data(), n * out, stream_);
  }
}

double GpuMlp::train(const float* x, const uint8_t* y, std::size_t n, float grad_multiplier) {
  if (n == 0) throw std::invalid_argument("GpuMlp::train: empty batch");
  upload(x, y, n);
  forward(n);
  delta_.resize(n * classes());
  row_loss_.resize(n);
  host_row_loss_.resize(n);
  softmax_xent(activations_.back().data(), y_.data(), n, to_int(classes()),
               grad_multiplier / static_cast<float>(n), row_loss_.data(), delta_.data(), stream_);
  check(cudaMemcpyAsync(host_row_loss_.data(), row_loss_.data(), row_loss_.bytes(),
                        cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpyAsync (losses)");
  check(cudaEventRecord(loss_ready_, stream_), "cudaEventRecord");

  for (std::size_t l = layers(); l-- > 0;) {
    const std::size_t in = sizes_[l], out = sizes_[l + 1];
    const LayerBuffers p = access_.begin(l, true);
    // dW (in × out) += input^T (in × n) · delta (n × out)
    run(blas_, weight_grad_gemm(layer_input(l), delta_.data(), p.weight_grad, n, in, out));
    add_bias_grad(p.bias_grad, delta_.data(), n, out, stream_);
    if (l > 0) {
      // delta_prev (n × in) = delta (n × out) · W^T (out × in), before end() releases W.
      delta_prev_.resize(n * in);
      run(blas_, input_grad_gemm(delta_.data(), p.weight, delta_prev_.data(), n, in, out));
    }
    access_.end(l, true);  // hands the layer's gradients to the runtime, ordered on the stream
    if (l == 0) break;
    relu_backward(delta_prev_.data(), activations_[l - 1].data(), n * in, stream_);
    std::swap(delta_, delta_prev_);
  }

  // The loss in the CPU host's order of summation (double, row by row).
  check(cudaEventSynchronize(loss_ready_), "cudaEventSynchronize (losses)");
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) total += host_row_loss_.data()[i];
  return total / static_cast<double>(n);
}

std::size_t GpuMlp::count_correct(const float* x, const uint8_t* y, std::size_t n) {
  upload(x, y, n);
  forward(n);
  check(cudaMemsetAsync(correct_.data(), 0, correct_.bytes(), stream_), "cudaMemsetAsync");
  cuda::count_correct(activations_.back().data(), y_.data(), n, to_int(classes()),
                      correct_.data(), stream_);
  check(cudaMemcpyAsync(host_correct_.data(), correct_.data(), correct_.bytes(),
                        cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpyAsync (correct count)");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  return static_cast<std::size_t>(*host_correct_.data());
}

}  // namespace strata::fmnist::cuda
