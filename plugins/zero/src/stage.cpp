#include "stage.hpp"

#include "dtype_cast.hpp"
#include "stage0.hpp"
#include "stage1.hpp"
#include "stage2.hpp"
#include "stage3.hpp"

#include <string>

namespace strata::zero {

std::unique_ptr<Stage> make_stage(const ZeroConfig& config, const sdk::Host& host) {
  switch (config.stage) {
    case 0: return std::make_unique<Stage0>(config, host);
    case 1: return std::make_unique<Stage1>(config, host);
    case 2: return std::make_unique<Stage2>(config, host);
    case 3: return std::make_unique<Stage3>(config, host);
    default:
      sdk::fail(
          STRATA_ERR_INVALID_ARGUMENT,
          "zero_optimization.stage: expected 0, 1, 2 or 3, got " + std::to_string(config.stage));
  }
}

void check_host_param(const ParamRecord& param, int stage, bool deferred_ok) {
  const std::string who = "parameter " + param.name + ": sharding stage " + std::to_string(stage);
  check_model_dtype(param.dtype, who);
  if (param.device.type != STRATA_DEVICE_HOST && param.device.type != STRATA_DEVICE_CUDA) {
    sdk::fail(STRATA_ERR_UNSUPPORTED, who + " supports host and CUDA device memory, got device type " +
                                          std::to_string(param.device.type));
  }
  if (param.count > 0 && param.data == nullptr && !deferred_ok) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
              who + " keeps parameters whole in the host's buffers: data must be set (deferred "
                    "values need stage 3)");
  }
  if (param.count > 0 && param.data == nullptr && param.device.type == STRATA_DEVICE_CUDA) {
    sdk::fail(STRATA_ERR_UNSUPPORTED,
              who + ": deferred values (no data) for parameters in CUDA device memory are not "
                    "implemented; register its data");
  }
}

}  // namespace strata::zero
