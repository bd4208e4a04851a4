// OneCycle and LRRangeTest, following DeepSpeed's lr_schedules.py term by term (same operations
// in the same order, so the doubles match DeepSpeed's).
#include <cmath>
#include <limits>

#include "schedule/lr_schedule_detail.hpp"

namespace strata::rt::schedule_detail {
namespace {

class OneCycle final : public LrSchedule {
 public:
  explicit OneCycle(const OneCycleParams& p)
      : p_(p),
        // total_size = cycle_first_step_size + cycle_second_step_size
        total_size_(p.first_step_size + p.second_step_size),
        // step_ratio = cycle_first_step_size / total_size
        step_ratio_(p.first_step_size / total_size_) {}

  // Before the first step: _initialize_lr writes min_lrs. Then get_lr: _get_cycle_lr while
  // last_batch_iteration < total_size, else _get_decay_lr(last_batch_iteration - total_size + 1).
  double lr(int64_t last_batch_iteration) const override {
    if (last_batch_iteration < 0) return p_.min_lr;
    const double i = static_cast<double>(last_batch_iteration);
    if (i < total_size_) {
      // _get_cycle_lr: base_height = (cycle_max_lr - cycle_min_lr) * scale_factor;
      // lr = cycle_min_lr + base_height
      const double base_height = (p_.max_lr - p_.min_lr) * scale_factor(last_batch_iteration);
      return p_.min_lr + base_height;
    }
    // _get_decay_lr
    if (p_.skip_lr_decay) return p_.min_lr;
    const double decay_batch_iteration = i - total_size_ + 1;
    const double decay_interval = decay_batch_iteration / p_.decay_step_size;
    const double lr_decay_factor = (1 + p_.decay_lr_rate * decay_interval);
    return p_.min_lr / lr_decay_factor;
  }

  // Before the first step: _initialize_momentum writes betas = (cycle_min_mom, 0.99). Then
  // get_mom: _get_cycle_mom while last_batch_iteration < total_size, else _get_decay_mom.
  double momentum(int64_t last_batch_iteration) const override {
    if (!p_.cycle_momentum) return std::numeric_limits<double>::quiet_NaN();
    if (last_batch_iteration < 0) return p_.min_mom;
    const double i = static_cast<double>(last_batch_iteration);
    if (i < total_size_) {
      // _get_cycle_mom: base_height = (cycle_max_mom - cycle_min_mom) * scale_factor;
      // momentum = cycle_max_mom - base_height
      const double base_height = (p_.max_mom - p_.min_mom) * scale_factor(last_batch_iteration);
      return p_.max_mom - base_height;
    }
    // _get_decay_mom (note: DeepSpeed multiplies, so a positive decay_mom_rate raises momentum)
    if (p_.skip_mom_decay) return p_.max_mom;
    const double decay_batch_iteration = i - total_size_ + 1;
    const double decay_interval = decay_batch_iteration / p_.decay_step_size;
    const double mom_decay_factor = (1 + p_.decay_mom_rate * decay_interval);
    return p_.max_mom * mom_decay_factor;
  }

  // betas = (momentum, 0.99) whenever momentum is cycled: min_moms/max_moms hold 0.99 as beta2.
  double beta2(int64_t) const override {
    return p_.cycle_momentum ? 0.99 : std::numeric_limits<double>::quiet_NaN();
  }

  const char* type() const override { return "OneCycle"; }

 private:
  // _get_scale_factor: the position within the cycle, 0 at the ends, 1 at the peak; with a stair
  // count > 0 in that half, quantised from the integer batch offset into that many stairs.
  double scale_factor(int64_t last_batch_iteration) const {
    const int64_t batch_iteration = last_batch_iteration + 1;
    const double b = static_cast<double>(batch_iteration);
    // cycle = math.floor(1 + batch_iteration / total_size)
    const double cycle = std::floor(1 + b / total_size_);
    // x = 1. + batch_iteration / total_size - cycle
    const double x = 1. + b / total_size_ - cycle;
    double scale_factor;
    int64_t stair_count;
    if (x <= step_ratio_) {
      scale_factor = x / step_ratio_;
      stair_count = p_.first_stair_count;
    } else {
      scale_factor = (x - 1) / (step_ratio_ - 1);
      stair_count = p_.second_stair_count;
    }
    if (stair_count > 0) {
      const double count = static_cast<double>(stair_count);
      // cycle_iteration = batch_iteration % total_size (a float remainder of non-negatives)
      const double cycle_iteration = std::fmod(b, total_size_);
      double stair_position;
      if (cycle_iteration <= p_.first_step_size) {
        // stair_position = cycle_iteration * stair_count / first_step_size
        stair_position = cycle_iteration * count / p_.first_step_size;
      } else {
        // stair_position = (total_size - cycle_iteration) * stair_count / second_step_size
        stair_position = (total_size_ - cycle_iteration) * count / p_.second_step_size;
      }
      // scale_factor = math.floor(stair_position) / stair_count
      scale_factor = std::floor(stair_position) / count;
    }
    return scale_factor;
  }

  OneCycleParams p_;
  double total_size_;
  double step_ratio_;
};

class LrRangeTest final : public LrSchedule {
 public:
  explicit LrRangeTest(const LrRangeTestParams& p) : p_(p) {}

  // Before the first step the constructor writes min_lr; then get_lr:
  // lr_range_test_min_lr * _get_increase().
  double lr(int64_t last_batch_iteration) const override {
    if (last_batch_iteration < 0) return p_.min_lr;
    const double position =
        static_cast<double>(last_batch_iteration + 1) / static_cast<double>(p_.step_size);
    // _staircase_interval: math.floor(float(last_batch_iteration + 1) / step_size);
    // _continuous_interval: float(last_batch_iteration + 1) / step_size
    const double interval = p_.staircase ? std::floor(position) : position;
    // _get_increase: (1 + step_rate * interval)
    const double lr_increase = (1 + p_.step_rate * interval);
    return p_.min_lr * lr_increase;
  }
  const char* type() const override { return "LRRangeTest"; }

 private:
  LrRangeTestParams p_;
};

}  // namespace

std::unique_ptr<LrSchedule> make_one_cycle(const OneCycleParams& p) {
  return std::make_unique<OneCycle>(p);
}
std::unique_ptr<LrSchedule> make_lr_range_test(const LrRangeTestParams& p) {
  return std::make_unique<LrRangeTest>(p);
}

}  // namespace strata::rt::schedule_detail
