// The GPU mode with CUDA: device choice, the stream, the device-resident parameters and the model.
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "cuda_check.hpp"
#include "device_choice.hpp"
#include "gpu_mlp.hpp"
#include "gpu_runtime_layers.hpp"
#include "gpu_session.hpp"

namespace strata::fmnist {
namespace {

std::vector<std::size_t> layer_sizes(const Mlp& model) {
  std::vector<std::size_t> sizes{model.inputs()};
  for (std::size_t l = 0; l < model.layers(); ++l) {
    sizes.push_back(model.params()[2 * l + 1].data.size());  // b_l has one element per output
  }
  return sizes;
}

int visible_devices() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  // No driver or no device reads as zero devices: choose_device then says so, naming the rank.
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) return 0;
  cuda::check(status, "cudaGetDeviceCount");
  return count;
}

class CudaSession : public GpuSession {
 public:
  CudaSession(Runtime& runtime, const Mlp& host_model, const GpuOptions& options) {
    const WorldInfo world = runtime.world();
    device_ = choose_device({world.local_rank, world.local_size, visible_devices(),
                             options.share_device});
    cuda::check(cudaSetDevice(device_), "cudaSetDevice");
    cudaDeviceProp props{};
    cuda::check(cudaGetDeviceProperties(&props, device_), "cudaGetDeviceProperties");
    name_ = "cuda:" + std::to_string(device_) + " (" + props.name + ")";
    cuda::check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    layers_ = std::make_unique<cuda::GpuRuntimeLayers>(runtime, host_model, device_, stream_);
    model_ = std::make_unique<cuda::GpuMlp>(layer_sizes(host_model), *layers_, stream_);
  }
  ~CudaSession() override {
    model_.reset();
    layers_.reset();
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  CudaSession(const CudaSession&) = delete;
  CudaSession& operator=(const CudaSession&) = delete;

  Model& model() override { return *model_; }
  void copy_to_model(Mlp& host_model) override { layers_->copy_to_model(host_model); }
  std::string device_name() const override { return name_; }

 private:
  int device_ = 0;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<cuda::GpuRuntimeLayers> layers_;
  std::unique_ptr<cuda::GpuMlp> model_;
};

}  // namespace

bool built_with_cuda() { return true; }

std::unique_ptr<GpuSession> connect_gpu(Runtime& runtime, const Mlp& host_model,
                                        const GpuOptions& options) {
  return std::make_unique<CudaSession>(runtime, host_model, options);
}

}  // namespace strata::fmnist
