// RuntimeLayers (../src/runtime_layers.hpp) for the GPU host: the model's parameters registered
// with the runtime in CUDA device memory ({STRATA_DEVICE_CUDA, ordinal}), one group per layer,
// gathered around each layer's forward and backward; the buffers it lends the GpuMlp are device
// pointers. Unlike the CPU host, which registers grad = NULL and lets the sharding plugin own
// gradient storage, it registers its own device gradient buffers: the runtime (API 1.7) leaves a
// NULL device gradient to a sharding plugin that can allocate device memory, and a host-owned one
// works with every plugin. Gradients are still read through the runtime's views, which may lend
// other buffers (ZeRO stage 2-3).
//
// Half model dtypes, as on the CPU: the MLP computes in f32; a gathered layer is widened into f32
// device scratch, and its f32 gradient (scratch zeroed at begin) is added into the runtime's half
// gradient at end, element by element (the SDK's strata::cuda::cast and accumulate, whose math is
// RuntimeLayers::add_grad_into's: tests/gpu_example checks that).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <strata/strata.hpp>
#include <vector>

#include "device_buffer.hpp"
#include "grouped_layers.hpp"
#include "mlp.hpp"

namespace strata::fmnist::cuda {

class GpuRuntimeLayers : public GroupedLayers {
 public:
  // Copies the model's initial values to `device` (rounded to the model dtype on the host, as the
  // CPU host does), registers them with gradient buffers on the device, defines "layer1", ...,
  // names `stream` to the runtime and finalizes. The device buffers are registered host-owned:
  // this object must outlive `runtime`.
  GpuRuntimeLayers(Runtime& runtime, const Mlp& model, int device, cudaStream_t stream);

  // Copies the runtime's current parameters into the model's host vectors (f32). Collective.
  void copy_to_model(Mlp& model);

 private:
  struct Scratch {  // f32 copies of one parameter, half model dtype only
    DeviceBuffer<float> data, grad;
  };
  const float* widen(uint32_t p, const ParamView& view) override;
  float* grad_buffer(uint32_t p, const ParamView& view) override;
  void add_grad_into(uint32_t p, const ParamView& view) override;

  int32_t dtype_;
  bool half_;
  cudaStream_t stream_;
  std::vector<std::string> names_;
  std::vector<DeviceBuffer<uint8_t>> registered_;  // per parameter its data, then its gradient
  std::vector<Scratch> scratch_;
};

}  // namespace strata::fmnist::cuda
