// Where the job's parameters live, checked at finalize before any of their memory is touched:
// every parameter on one device, and every stratum able to work on that memory (the comm plugin's
// caps.device_mask, the offload plugin's caps.device_type, plugins that predate device memory).
// Pure: runs without a device, on fake device pointers.
#pragma once

#include <strata/plugin_api.h>

#include <cstdint>
#include <string>
#include <vector>

namespace strata::rt {

struct PlacedParam {
  std::string name;
  strata_device device;
};

// A training stratum's plugin as the check sees it.
struct PlacedPlugin {
  std::string role;  // "sharding", "precision", "offload"
  std::string name;
  uint32_t built_minor;  // its ops table's: below 7 it knows only host memory
};

struct PlacementRules {
  std::string comm_name;
  uint32_t comm_device_mask;  // caps.device_mask
  std::string offload_name;
  int32_t offload_device_type;  // caps.device_type: where the optimizer step runs
  std::vector<PlacedPlugin> plugins;
};

// "host", "cuda:0".
std::string device_text(const strata_device& device);

// Where the memory report counts memory on `device`.
inline strata_mem_location memory_location(const strata_device& device) {
  return device.type == STRATA_DEVICE_CUDA ? STRATA_MEM_DEVICE : STRATA_MEM_HOST;
}


// The job's device (params non-empty), or throws strata::rt::Error (STRATA_ERR_UNSUPPORTED; two
// devices: STRATA_ERR_INVALID_ARGUMENT) with a "finalize: ..." sentence naming both sides.
strata_device check_device_placement(const std::vector<PlacedParam>& params,
                                     const PlacementRules& rules);

}  // namespace strata::rt
