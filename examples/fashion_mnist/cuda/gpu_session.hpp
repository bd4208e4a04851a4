// The GPU mode of the Fashion-MNIST host (--device cuda), as main.cpp sees it: no CUDA header, so
// the binary builds the same with and without CUDA. Without CUDA, built_with_cuda() is false and
// connect_gpu refuses.
#pragma once

#include <memory>
#include <string>
#include <strata/strata.hpp>

#include "mlp.hpp"
#include "model.hpp"

namespace strata::fmnist {

struct GpuOptions {
  bool share_device = false;  // let several local ranks train on one device (--share-device)
};

class GpuSession {
 public:
  virtual ~GpuSession() = default;
  // The model the Trainer drives: forward and backward on the device.
  virtual Model& model() = 0;
  // Copies the runtime's parameters into `host_model`'s vectors (for the dumps). Collective.
  virtual void copy_to_model(Mlp& host_model) = 0;
  // "cuda:0 (NVIDIA H200)", for the start-up line.
  virtual std::string device_name() const = 0;
};

// True when this binary was built with CUDA (-DSTRATA_CUDA=ON or found by AUTO).
bool built_with_cuda();
inline constexpr const char* kBuiltWithoutCuda =
    "--device cuda: this fashion_mnist was built without CUDA (configure with -DSTRATA_CUDA=ON "
    "where nvcc, the CUDA toolkit and NCCL are installed)";

// Picks this rank's device (choose_device: local rank, --share-device), makes it current, creates
// the stream, registers `host_model`'s initial values in device memory with the runtime and
// finalizes it. The session holds the registered device buffers: destroy it after `runtime`.
std::unique_ptr<GpuSession> connect_gpu(Runtime& runtime, const Mlp& host_model,
                                        const GpuOptions& options);

}  // namespace strata::fmnist
