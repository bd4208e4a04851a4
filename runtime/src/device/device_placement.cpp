#include "device/device_placement.hpp"

#include "error.hpp"

namespace strata::rt {
namespace {

bool same_device(const strata_device& a, const strata_device& b) {
  return a.type == b.type && (a.type == STRATA_DEVICE_HOST || a.index == b.index);
}

std::string memory_of(const strata_device& device) {
  return device.type == STRATA_DEVICE_HOST ? "host memory" : device_text(device) + " memory";
}

// "host memory", "CUDA device memory", "host and CUDA device memory".
std::string moved_memory(uint32_t mask) {
  const bool host = (mask & STRATA_DEVICE_BIT(STRATA_DEVICE_HOST)) != 0;
  const bool cuda = (mask & STRATA_DEVICE_BIT(STRATA_DEVICE_CUDA)) != 0;
  if (host && cuda) return "host and CUDA device memory";
  if (cuda) return "CUDA device memory";
  if (host) return "host memory";
  return "no memory at all (device_mask " + std::to_string(mask) + ")";
}

}  // namespace

std::string device_text(const strata_device& device) {
  if (device.type == STRATA_DEVICE_HOST) return "host";
  if (device.type == STRATA_DEVICE_CUDA) return "cuda:" + std::to_string(device.index);
  return "device type " + std::to_string(device.type);
}

strata_device check_device_placement(const std::vector<PlacedParam>& params,
                                     const PlacementRules& rules) {
  const PlacedParam& first = params.front();
  for (const PlacedParam& p : params) {
    if (!same_device(p.device, first.device)) {
      throw Error(STRATA_ERR_INVALID_ARGUMENT,
                  "finalize: parameter '" + first.name + "' is in " + memory_of(first.device) +
                      " but parameter '" + p.name + "' is in " + memory_of(p.device) +
                      "; register every parameter on the same device (one device per process)");
    }
  }
  const strata_device device = first.device;
  const bool on_cuda = device.type == STRATA_DEVICE_CUDA;
  if ((rules.comm_device_mask & STRATA_DEVICE_BIT(device.type)) == 0) {
    if (on_cuda) {
      throw Error(STRATA_ERR_UNSUPPORTED,
                  "finalize: parameter '" + first.name + "' is in " + memory_of(device) +
                      ", but comm plugin '" + rules.comm_name + "' moves " +
                      moved_memory(rules.comm_device_mask) +
                      " only; use allreduce-nccl or allreduce-mpi over a CUDA-aware MPI");
    }
    throw Error(STRATA_ERR_UNSUPPORTED,
                "finalize: parameters are in " + memory_of(device) + " ('" + first.name +
                    "'), but comm plugin '" + rules.comm_name + "' moves " +
                    moved_memory(rules.comm_device_mask) +
                    " only; register CUDA parameters or use a host comm plugin (allreduce-mpi, "
                    "allreduce-gloo)");
  }
  if (!on_cuda && rules.offload_device_type == STRATA_DEVICE_CUDA) {
    throw Error(STRATA_ERR_UNSUPPORTED,
                "finalize: parameters are in host memory ('" + first.name +
                    "'), but offload plugin '" + rules.offload_name +
                    "' runs its step on the CUDA device; register CUDA parameters or use a host "
                    "optimizer");
  }
  if (on_cuda) {
    // A plugin built before ABI 1.7 takes every shard and buffer for host memory and would read
    // device pointers on the host. (A 1.7 offload plugin that steps on the host copies the shards
    // down itself: ZeRO-Offload.)
    for (const PlacedPlugin& plugin : rules.plugins) {
      if (plugin.built_minor < 7) {
        throw Error(STRATA_ERR_UNSUPPORTED,
                    "finalize: parameter '" + first.name + "' is in " + memory_of(device) +
                        ", but " + plugin.role + " plugin '" + plugin.name +
                        "' was built for ABI 1." + std::to_string(plugin.built_minor) +
                        ", which knows host memory only (device memory needs 1.7)");
      }
    }
  }
  return device;
}

}  // namespace strata::rt
