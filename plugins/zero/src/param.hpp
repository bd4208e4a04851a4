// A parameter and a parameter group as the host registered them: the plugin's own copies.
#pragma once

#include <strata/plugin_api.h>

#include <cstdint>
#include <string>
#include <vector>

namespace strata::zero {

struct ParamRecord {
  std::string name;  // copied: the descriptor's name is only valid during register_param
  int32_t dtype = STRATA_F32;
  strata_device device{STRATA_DEVICE_HOST, 0};
  uint64_t count = 0;
  void* data = nullptr;  // host-owned, valid until the runtime is destroyed
  void* grad = nullptr;  // host-owned, or NULL: the plugin provides gradient storage (ABI 1.1)
};

// A named set of parameters gathered and released together (a layer; ABI 1.1).
struct GroupRecord {
  std::string name;
  std::vector<uint32_t> params;
};

inline constexpr uint32_t kNoGroup = UINT32_MAX;

}  // namespace strata::zero
