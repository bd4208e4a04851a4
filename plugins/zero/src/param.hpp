// A parameter as the host registered it: the plugin's own copy of strata_param_desc.
#pragma once

#include <strata/plugin_api.h>

#include <cstdint>
#include <string>

namespace strata::zero {

struct ParamRecord {
  std::string name;  // copied: the descriptor's name is only valid during register_param
  int32_t dtype = STRATA_F32;
  strata_device device{STRATA_DEVICE_HOST, 0};
  uint64_t count = 0;
  void* data = nullptr;  // host-owned, valid until the runtime is destroyed
  void* grad = nullptr;
};

}  // namespace strata::zero
