// The engine's learning rate (strata.h, API 1.6): the manifest's "scheduler", the host's
// override (strata_set_lr) and the offload plugin's configured lr, in that order of precedence.
#include "engine/engine.hpp"
#include "log.hpp"

#include <cmath>
#include <string>

namespace strata::rt {

void Engine::create_schedule() {
  const auto found = manifest_.json.find("scheduler");
  if (found == manifest_.json.end()) return;
  require_step_lr(manifest_.source + ": /scheduler");
  schedule_ = make_lr_schedule(*found, manifest_.source, {offload_caps_.lr, offload_caps_.momentum});
  if (world_.rank == 0) {
    logger().info("scheduler: {}, first lr {}", schedule_->type(), schedule_->lr(schedule_iteration_));
  }
}

double Engine::lr() const {
  if (!std::isnan(lr_override_)) return lr_override_;
  if (schedule_) return schedule_->lr(schedule_iteration_);
  return offload_caps_.lr;
}

void Engine::set_lr(double lr) {
  if (!std::isnan(lr) && (!std::isfinite(lr) || lr < 0.0)) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                "set_lr: expected a finite learning rate >= 0, or NaN to clear the override; got " +
                    std::to_string(lr));
  }
  if (!std::isnan(lr)) require_step_lr("set_lr");
  lr_override_ = lr;
  lr_override_step_ = global_steps_;  // which rank's override is newest, when ranks join (join())
}

void Engine::require_step_lr(const std::string& who) const {
  const uint32_t minor = offload_.ops().header.built_minor;
  if (minor >= 6) return;
  throw Error(STRATA_ERR_UNSUPPORTED, who + ": " + offload_.label() + " was built against ABI 1." +
                                          std::to_string(minor) +
                                          ", which has no per-step learning rate (ABI 1.6)");
}

}  // namespace strata::rt
