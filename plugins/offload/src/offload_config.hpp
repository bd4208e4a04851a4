// Where the optimizer state lives and where the step runs: DeepSpeed's
// zero_optimization.offload_optimizer / offload_param blocks and sub_group_size.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace strata::offload {

enum class OffloadDevice { none, cpu, nvme };

struct OffloadConfig {
  // none: state beside the parameters (host memory in ABI 1.x). cpu: host memory, page-locked
  // when pin_memory. nvme: files under nvme_path, streamed through buffer_count buffers.
  OffloadDevice device = OffloadDevice::none;
  std::string nvme_path = "/local_nvme";  // DeepSpeed's default
  uint32_t buffer_count = 4;              // DeepSpeed's default; at least 2
  bool pin_memory = false;
  // Elements per piece that the nvme pipeline reads, steps and writes back as one unit
  // (zero_optimization.sub_group_size; DeepSpeed's default 1e9).
  uint64_t sub_group_size = 1'000'000'000;
  // offload_param (ABI 1.8's parameter store, ZeRO stage 3): none (the sharding plugin keeps its
  // partition itself), cpu (host memory, page-locked with its pin_memory) or nvme (a file under
  // its nvme_path, read ahead buffer_count × buffer_size elements).
  OffloadDevice param_device = OffloadDevice::none;
  std::string param_nvme_path = "/local_nvme";  // DeepSpeed's default
  bool param_pin_memory = false;
  uint64_t param_buffer_count = 5;            // DeepSpeed's default
  uint64_t param_buffer_size = 100'000'000;  // elements; DeepSpeed's default
  // Write the shards' f16/bf16 model copies in the optimizer's pass (offload.config key
  // "fused_copy_out"; false leaves the cast to the runtime, for comparison).
  bool fused_copy_out = true;
};

// Reads offload_optimizer, offload_param, sub_group_size and fused_copy_out from the offload
// config object.
// Throws sdk::Error naming the JSON path.
OffloadConfig read_offload(const nlohmann::json& root);

const char* device_name(OffloadDevice device);

}  // namespace strata::offload
