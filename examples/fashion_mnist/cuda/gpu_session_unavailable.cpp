// The GPU mode in a binary built without CUDA: refused, saying why.
#include <stdexcept>

#include "gpu_session.hpp"

namespace strata::fmnist {

bool built_with_cuda() { return false; }

std::unique_ptr<GpuSession> connect_gpu(Runtime&, const Mlp&, const GpuOptions&) {
  throw std::runtime_error(kBuiltWithoutCuda);
}

}  // namespace strata::fmnist
