#include "device_choice.hpp"

#include <strata/plugin.hpp>

#include <cuda_runtime_api.h>

#include <cstdlib>

namespace strata::allreduce_nccl {
namespace {

[[noreturn]] void refuse(const LaunchEnv& env, const std::string& message) {
  sdk::fail(STRATA_ERR_UNSUPPORTED, "allreduce-nccl: " + who(env) + ": " + message);
}

// What restricted the visible devices, for messages.
std::string visible_devices_note() {
  const char* mask = std::getenv("CUDA_VISIBLE_DEVICES");
  return mask != nullptr ? std::string(" (CUDA_VISIBLE_DEVICES=") + mask + ")" : "";
}

}  // namespace

std::string who(const LaunchEnv& env) {
  return "rank " + std::to_string(env.rank) + " (local rank " + std::to_string(env.local_rank) +
         ")";
}

DeviceChoice choose_device(const LaunchEnv& env, const Config& config) {
  int visible = 0;
  const cudaError_t counted = cudaGetDeviceCount(&visible);
  if (counted != cudaSuccess) {
    cudaGetLastError();  // clear it, so that no later CUDA call reports it again
    return choose_device_among(
        env, config, 0,
        std::string(cudaGetErrorName(counted)) + ": " + cudaGetErrorString(counted));
  }
  return choose_device_among(env, config, visible, "");
}

DeviceChoice choose_device_among(const LaunchEnv& env, const Config& config, int visible,
                                 const std::string& count_failure) {
  DeviceChoice choice;
  choice.visible = visible;
  if (!count_failure.empty() || visible == 0) {
    const std::string reason = count_failure.empty() ? "0 devices" : count_failure;
    refuse(env,
           "no CUDA device visible (cudaGetDeviceCount: " + reason + ")" + visible_devices_note());
  }
  const std::string devices =
      std::to_string(choice.visible) + " CUDA device(s) visible" + visible_devices_note();
  if (config.device >= 0) {
    if (config.device >= choice.visible) {
      refuse(env, "config device " + std::to_string(config.device) + ", but " + devices +
                      "; expected an ordinal below " + std::to_string(choice.visible));
    }
    choice.device = config.device;
    // Ranks configured onto one device are NCCL's duplicate-GPU case as well.
    choice.shared = config.share_device && env.local_size > 1;
    return choice;
  }
  if (env.local_size > choice.visible && !config.share_device) {
    refuse(env, std::to_string(env.local_size) + " ranks on this host but " + devices +
                    "; NCCL needs one device per rank (start at most " +
                    std::to_string(choice.visible) +
                    " ranks per host, or set \"share_device\": true for a slow test setup)");
  }
  choice.device = env.local_rank % choice.visible;
  choice.shared = env.local_size > choice.visible;
  return choice;
}

}  // namespace strata::allreduce_nccl
