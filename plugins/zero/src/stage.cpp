#include "stage.hpp"

#include "stage0.hpp"
#include "stage1.hpp"
#include "stage2.hpp"
#include "stage3.hpp"

#include <string>

namespace strata::zero {

void Stage::end_micro_step(bool /*boundary*/) { groups_.expect_none_gathered(); }

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

}  // namespace strata::zero
