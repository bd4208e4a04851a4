// The MLP of mlp.hpp on a CUDA device: the same layers, initialisation aside (parameters come from
// the runtime), forward and backward as cuBLAS GEMMs plus the small kernels of kernels.hpp, all
// on one stream. Parameters and gradients are reached through a LayerAccess whose buffers are
// device pointers (GpuRuntimeLayers); gradients are accumulated (+=) into them as on the CPU.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "device_buffer.hpp"
#include "mlp.hpp"
#include "model.hpp"

namespace strata::fmnist::cuda {

// Page-locked host memory, so that copies from the device are asynchronous.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { cudaFreeHost(data_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void resize(std::size_t count) {
    if (count <= count_) return;
    void* fresh = nullptr;
    check(cudaMallocHost(&fresh, count * sizeof(T)), "cudaMallocHost");
    cudaFreeHost(data_);
    data_ = static_cast<T*>(fresh);
    count_ = count;
  }
  T* data() { return data_; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

class GpuMlp : public Model {
 public:
  // sizes = {inputs, hidden..., classes}; `access` and `stream` must outlive the model. Uses the
  // current CUDA device.
  GpuMlp(std::vector<std::size_t> sizes, LayerAccess& access, cudaStream_t stream);
  ~GpuMlp() override;
  GpuMlp(const GpuMlp&) = delete;
  GpuMlp& operator=(const GpuMlp&) = delete;

  std::size_t inputs() const override { return sizes_.front(); }
  // Enqueues forward and backward; returns when the loss is known (backward may still run: the
  // runtime orders its reductions after it on the stream).
  double train(const float* x, const uint8_t* y, std::size_t n, float grad_multiplier) override;
  std::size_t count_correct(const float* x, const uint8_t* y, std::size_t n) override;

 private:
  std::size_t layers() const { return sizes_.size() - 1; }
  std::size_t classes() const { return sizes_.back(); }
  void upload(const float* x, const uint8_t* y, std::size_t n);
  // Enqueues the layers' forward for the n uploaded samples into activations_ (logits last).
  void forward(std::size_t n);
  const float* layer_input(std::size_t layer) const;

  std::vector<std::size_t> sizes_;
  LayerAccess& access_;
  cudaStream_t stream_;
  cublasHandle_t blas_ = nullptr;
  cudaEvent_t loss_ready_ = nullptr;
  DeviceBuffer<float> x_;
  DeviceBuffer<uint8_t> y_;
  std::vector<DeviceBuffer<float>> activations_;  // per layer: n × sizes_[layer + 1]
  DeviceBuffer<float> delta_, delta_prev_;         // gradient w.r.t. a layer's pre-activation
  DeviceBuffer<double> row_loss_;
  DeviceBuffer<unsigned long long> correct_;
  PinnedBuffer<double> host_row_loss_;
  PinnedBuffer<unsigned long long> host_correct_;
};

}  // namespace strata::fmnist::cuda
