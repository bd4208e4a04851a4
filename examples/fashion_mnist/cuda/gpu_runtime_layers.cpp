#include "gpu_runtime_layers.hpp"

#include <strata_common/cuda/kernels.hpp>
#include <strata/half.hpp>

#include <cstring>
#include <stdexcept>
#include <string>


namespace strata::fmnist::cuda {
namespace {

// The SDK kernels return a cudaError_t as an int.
void check_sdk(int status, const char* call) {
  if (status != 0) {
    throw std::runtime_error(std::string(call) + " failed: " + strata::cuda::error_string(status));
  }
}

template <class What>
void* checked(void* p, What&& what) {
  if (p == nullptr) throw std::logic_error("runtime gave no buffer for " + what());
  return p;
}

// The initial values as the model dtype's bytes, converted on the host as RuntimeLayers does.
std::vector<uint8_t> model_dtype_bytes(const std::vector<float>& values, int32_t dtype) {
  std::vector<uint8_t> bytes;
  if (dtype == STRATA_F32) {
    bytes.resize(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  }
  std::vector<uint16_t> half(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    half[i] = dtype == STRATA_BF16 ? float_to_bf16(values[i]) : float_to_f16(values[i]);
  }
  bytes.resize(half.size() * sizeof(uint16_t));
  std::memcpy(bytes.data(), half.data(), bytes.size());
  return bytes;
}

}  // namespace

GpuRuntimeLayers::GpuRuntimeLayers(Runtime& runtime, const Mlp& model, int device,
                                   cudaStream_t stream)
    : GroupedLayers(runtime),
      dtype_(runtime.training().model_dtype),
      half_(dtype_ == STRATA_F16 || dtype_ == STRATA_BF16),
      stream_(stream) {
  if (dtype_ != STRATA_F32 && !half_) {
    throw std::runtime_error(std::string("the manifest's precision stratum wants parameters in ") +
                             strata_dtype_name(dtype_) + "; this example handles f32, f16, bf16");
  }
  for (const Param& p : model.params()) {
    const std::vector<uint8_t> bytes = model_dtype_bytes(p.data, dtype_);
    void* data = registered_.emplace_back(bytes.size()).data();
    check(cudaMemcpy(data, bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
          "cudaMemcpy (initial parameters)");
    void* grad = registered_.emplace_back(bytes.size()).data();  // finalize zeroes it
    names_.push_back(p.name);
    scratch_.emplace_back();
    add_param(runtime.register_param(p.name, static_cast<strata_dtype>(dtype_), data, grad,
                                     p.data.size(), strata_device{STRATA_DEVICE_CUDA, device}));
  }
  define_layer_groups(model.layers());
  runtime.set_stream(stream_);
  runtime.finalize();
}

const float* GpuRuntimeLayers::widen(uint32_t p, const ParamView& view) {
  void* data = checked(view.data, [&] { return names_[p]; });
  if (!half_) return static_cast<const float*>(data);
  auto& wide = scratch_[p].data;
  wide.resize(view.count);
  check_sdk(strata::cuda::cast(data, static_cast<strata_dtype>(dtype_), wide.data(), STRATA_F32,
                              view.count, stream_),
            "strata::cuda::cast (widening a half parameter)");
  return wide.data();
}

float* GpuRuntimeLayers::grad_buffer(uint32_t p, const ParamView& view) {
  void* grad = checked(view.grad, [&] { return "the gradient of " + names_[p]; });
  if (!half_) return static_cast<float*>(grad);
  auto& wide = scratch_[p].grad;
  wide.resize(view.count);
  check(cudaMemsetAsync(wide.data(), 0, wide.bytes(), stream_), "cudaMemsetAsync (gradient)");
  return wide.data();
}

// The MLP accumulated this micro-batch's gradient into f32 scratch; the runtime's buffer may
// already hold earlier micro-batches' (stages 0-1 keep gradients across micro-batches).
void GpuRuntimeLayers::add_grad_into(uint32_t p, const ParamView& view) {
  if (!half_) return;
  void* grad = checked(view.grad, [&] { return "the gradient of " + names_[p]; });
  check_sdk(strata::cuda::accumulate(grad, static_cast<strata_dtype>(dtype_),
                                    scratch_[p].grad.data(), STRATA_F32, view.count, stream_),
            "strata::cuda::accumulate (a gradient into its half buffer)");
}

void GpuRuntimeLayers::copy_to_model(Mlp& model) {
  for (std::size_t l = 0; l < model.layers(); ++l) {
    const LayerBuffers b = begin(l, false);
    auto& w = model.params()[2 * l].data;
    auto& bias = model.params()[2 * l + 1].data;
    check(cudaMemcpyAsync(w.data(), b.weight, w.size() * sizeof(float), cudaMemcpyDeviceToHost,
                          stream_),
          "cudaMemcpyAsync (weights to the host)");
    check(cudaMemcpyAsync(bias.data(), b.bias, bias.size() * sizeof(float),
                          cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync (biases to the host)");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    end(l, false);
  }
}

}  // namespace strata::fmnist::cuda
