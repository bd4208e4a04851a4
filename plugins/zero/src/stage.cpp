#include "stage.hpp"

#include "stage0.hpp"

#include <string>

namespace strata::zero {

std::unique_ptr<Stage> make_stage(const ZeroConfig& config, const sdk::Host& host) {
  switch (config.stage) {
    case 0:
      return std::make_unique<Stage0>(config, host);
    default:
      sdk::fail(STRATA_ERR_UNSUPPORTED,
                "zero_optimization.stage: " + std::to_string(config.stage) +
                    " is not available; this build of strata_zero implements stage 0 only");
  }
}

}  // namespace strata::zero
