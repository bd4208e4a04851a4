#include "device_choice.hpp"

#include <stdexcept>
#include <string>

namespace strata::fmnist {

int choose_device(const DeviceChoiceInput& in) {
  const std::string rank = "local rank " + std::to_string(in.local_rank) + " of " +
                           std::to_string(in.local_size) + " on this node";
  if (in.local_rank < 0 || in.local_size < 1 || in.local_rank >= in.local_size) {
    throw std::runtime_error("--device cuda: " + rank + " is not a valid local rank");
  }
  if (in.device_count <= 0) {
    throw std::runtime_error("--device cuda: no visible CUDA device for " + rank +
                             " (check nvidia-smi and CUDA_VISIBLE_DEVICES)");
  }
  if (in.share) return in.local_rank % in.device_count;
  if (in.local_size > in.device_count) {
    throw std::runtime_error("--device cuda: " + std::to_string(in.local_size) +
                             " ranks on this node but " + std::to_string(in.device_count) +
                             " visible CUDA device(s), one per rank (" + rank +
                             "); start at most " + std::to_string(in.device_count) +
                             " ranks per node or pass --share-device");
  }
  return in.local_rank;
}

}  // namespace strata::fmnist
