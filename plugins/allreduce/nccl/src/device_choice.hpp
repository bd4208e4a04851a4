// Which CUDA device this rank's communicator lives on: the configured ordinal, else the local
// rank's. Fails before any NCCL call when there is no such device, with the rank in the message.
#pragma once

#include "config.hpp"
#include "launch_env.hpp"

#include <string>

namespace strata::allreduce_nccl {

struct DeviceChoice {
  int device = 0;
  int visible = 0;      // cudaGetDeviceCount
  bool shared = false;  // another local rank is on the same device (Config::share_device)
};

// Throws sdk::Error (STRATA_ERR_UNSUPPORTED) with
//   "rank R (local rank L): no CUDA device visible (cudaGetDeviceCount: ...)",
//   "rank R (local rank L): N ranks on this host but M CUDA device(s) visible ...", or
//   "rank R (local rank L): config device D, but M CUDA device(s) visible ...".
DeviceChoice choose_device(const LaunchEnv& env, const Config& config);

// The rule itself, given what cudaGetDeviceCount said: `visible` devices, or `count_failure`
// (its error, non-empty) when it failed. Asks CUDA nothing (tests run it without a device).
DeviceChoice choose_device_among(const LaunchEnv& env, const Config& config, int visible,
                                 const std::string& count_failure);

// "rank R (local rank L)", the prefix of every per-rank message.
std::string who(const LaunchEnv& env);

}  // namespace strata::allreduce_nccl
