// DeepSpeed's fp16 DynamicLossScaler.update_scale (deepspeed/runtime/fp16/loss_scaler.py, current
// deepspeedai/DeepSpeed; releases before the "stable_interval" form doubled one step earlier, at
// (cur_iter - last_overflow_iter) % window == 0), written independently of the amp plugin so that
// strata-plugin-check's loss_scale.* checks and the project's multi-rank tests (tests/mixed) check
// a plugin's scale trajectory against DeepSpeed's rules rather than against itself:
//
//   overflow:    if hysteresis == 1 or cur_hysteresis == 1:
//                  if cur_scale == min_scale: raise "... cannot decrease scale anymore"
//                  cur_scale = max(cur_scale / 2, min_scale)
//                else: cur_hysteresis -= 1
//                last_overflow_iter = cur_iter
//   no overflow: if consecutive_hysteresis: cur_hysteresis = hysteresis
//                stable_interval = cur_iter - last_overflow_iter - 1
//                if stable_interval > 0 and stable_interval % scale_window == 0:
//                  if not consecutive_hysteresis: cur_hysteresis = hysteresis
//                  cur_scale *= 2
//   cur_iter += 1            (cur_iter starts at 0, last_overflow_iter at -1)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace strata::plugin_check {

struct ScalerSettings {
  int initial_scale_power = 16;
  int64_t window = 1000;
  int64_t hysteresis = 2;
  bool consecutive_hysteresis = false;
  double min_loss_scale = 1.0;
};

class DeepSpeedLossScaler {
 public:
  explicit DeepSpeedLossScaler(const ScalerSettings& s)
      : s_(s), scale_(std::ldexp(1.0, s.initial_scale_power)), hysteresis_(s.hysteresis) {}

  double scale() const { return scale_; }

  // True when an overflow now is the one DeepSpeed stops the run on.
  bool overflow_stops_run() const {
    return (s_.hysteresis == 1 || hysteresis_ == 1) && scale_ == s_.min_loss_scale;
  }

  void update(bool overflow) {
    if (overflow) {
      if (overflow_stops_run()) throw std::logic_error("DeepSpeedLossScaler: update past the minimum");
      if (s_.hysteresis == 1 || hysteresis_ == 1) {
        scale_ = std::max(scale_ / 2.0, s_.min_loss_scale);
      } else {
        --hysteresis_;
      }
      last_overflow_ = iteration_;
    } else {
      if (s_.consecutive_hysteresis) hysteresis_ = s_.hysteresis;
      const int64_t stable_interval = iteration_ - last_overflow_ - 1;
      if (stable_interval > 0 && stable_interval % s_.window == 0) {
        if (!s_.consecutive_hysteresis) hysteresis_ = s_.hysteresis;
        scale_ *= 2.0;
      }
    }
    ++iteration_;
  }

 private:
  ScalerSettings s_;
  double scale_;
  int64_t hysteresis_;
  int64_t iteration_ = 0;
  int64_t last_overflow_ = -1;
};

}  // namespace strata::plugin_check
