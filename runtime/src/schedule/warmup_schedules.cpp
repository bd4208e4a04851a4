// WarmupLR, WarmupDecayLR and WarmupCosineLR, following DeepSpeed's lr_schedules.py term by term
// (same operations in the same order, so the doubles match DeepSpeed's).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "schedule/lr_schedule_detail.hpp"

namespace strata::rt::schedule_detail {
namespace {

// The warmup fraction both warmup families share while last_batch_iteration < warmup_num_steps:
// WarmupLR._get_gamma / WarmupCosineLR.get_lr_ratio's first branch.
double warmup_fraction(WarmupType type, double inverse_log_warm_up, int64_t last_batch_iteration,
                       int64_t warmup_num_steps) {
  if (type == WarmupType::Log) {
    // inverse_log_warm_up * math.log(last_batch_iteration + 1)
    return inverse_log_warm_up * std::log(static_cast<double>(last_batch_iteration + 1));
  }
  // last_batch_iteration / warmup_num_steps
  return static_cast<double>(last_batch_iteration) / static_cast<double>(warmup_num_steps);
}

class WarmupLr : public LrSchedule {
 public:
  explicit WarmupLr(const WarmupLrParams& p)
      : p_(p),
        // delta_lrs = max_lrs - min_lrs
        delta_lr_(p.max_lr - p.min_lr),
        // inverse_log_warm_up = 1.0 / math.log(warmup_num_steps)
        inverse_log_warm_up_(1.0 / std::log(static_cast<double>(p.warmup_num_steps))) {}

  // get_lr: min_lrs before the first step (the constructor writes them: update_lr(get_lr()) with
  // last_batch_iteration == -1), then min_lr + delta_lr * gamma.
  double lr(int64_t last_batch_iteration) const override {
    if (last_batch_iteration < 0) return p_.min_lr;
    const double gamma = get_gamma(last_batch_iteration);
    return p_.min_lr + (delta_lr_ * gamma);
  }
  const char* type() const override { return "WarmupLR"; }

 protected:
  // _get_gamma: the warmup fraction, then 1.0.
  virtual double get_gamma(int64_t last_batch_iteration) const {
    if (last_batch_iteration < p_.warmup_num_steps) return warmup(last_batch_iteration);
    return 1.0;
  }
  double warmup(int64_t last_batch_iteration) const {
    return warmup_fraction(p_.warmup_type, inverse_log_warm_up_, last_batch_iteration,
                           p_.warmup_num_steps);
  }
  const WarmupLrParams& params() const { return p_; }

 private:
  WarmupLrParams p_;
  double delta_lr_;
  double inverse_log_warm_up_;
};

class WarmupDecayLr final : public WarmupLr {
 public:
  explicit WarmupDecayLr(const WarmupDecayLrParams& p)
      : WarmupLr(p.warmup), total_num_steps_(p.total_num_steps) {}
  const char* type() const override { return "WarmupDecayLR"; }

 private:
  // WarmupDecayLR._get_gamma: the warmup fraction, then the linear decay
  // max(0.0, float(total_num_steps - last_batch_iteration) /
  //          float(max(1.0, total_num_steps - warmup_num_steps))).
  double get_gamma(int64_t last_batch_iteration) const override {
    const int64_t warmup_num_steps = params().warmup_num_steps;
    if (last_batch_iteration < warmup_num_steps) return warmup(last_batch_iteration);
    return std::max(0.0,
                    static_cast<double>(total_num_steps_ - last_batch_iteration) /
                        std::max(1.0, static_cast<double>(total_num_steps_ - warmup_num_steps)));
  }

  int64_t total_num_steps_;
};

class WarmupCosineLr final : public LrSchedule {
 public:
  explicit WarmupCosineLr(const WarmupCosineLrParams& p)
      : p_(p), inverse_log_warm_up_(1.0 / std::log(static_cast<double>(p.warmup_num_steps))) {}

  // get_lr: 0.0 before the first step (the constructor writes get_lr() with
  // last_batch_iteration == -1, whose ratio is 0.0), then org_lr * get_lr_ratio().
  double lr(int64_t last_batch_iteration) const override {
    if (last_batch_iteration < 0) return 0.0;
    return p_.org_lr * lr_ratio(last_batch_iteration);
  }
  const char* type() const override { return "WarmupCosineLR"; }

 private:
  // get_lr_ratio.
  double lr_ratio(int64_t last_batch_iteration) const {
    if (last_batch_iteration < p_.warmup_num_steps) {
      const double ratio = warmup_fraction(p_.warmup_type, inverse_log_warm_up_,
                                           last_batch_iteration, p_.warmup_num_steps);
      // ratio_delta = 1. - warmup_min_ratio; ratio = warmup_min_ratio + ratio * ratio_delta
      const double ratio_delta = 1. - p_.warmup_min_ratio;
      return p_.warmup_min_ratio + ratio * ratio_delta;
    }
    // real_last_step = last_batch_iteration - warmup_num_steps + 1
    const int64_t real_last_step = last_batch_iteration - p_.warmup_num_steps + 1;
    // real_total_steps = max(1, total_num_steps - warmup_num_steps)
    const int64_t real_total_steps = std::max<int64_t>(1, p_.total_num_steps - p_.warmup_num_steps);
    // cosine_progress = min(1.0, real_last_step / real_total_steps)
    const double cosine_progress =
        std::min(1.0, static_cast<double>(real_last_step) / static_cast<double>(real_total_steps));
    // ratio_delta = 1. - cos_min_ratio; ratio = (1 + math.cos(math.pi * cosine_progress)) / 2
    const double ratio_delta = 1. - p_.cos_min_ratio;
    const double ratio = (1 + std::cos(std::numbers::pi * cosine_progress)) / 2;
    // ratio = max(0.0, cos_min_ratio + ratio_delta * ratio)
    return std::max(0.0, p_.cos_min_ratio + ratio_delta * ratio);
  }

  WarmupCosineLrParams p_;
  double inverse_log_warm_up_;
};

}  // namespace

std::unique_ptr<LrSchedule> make_warmup_lr(const WarmupLrParams& p) {
  return std::make_unique<WarmupLr>(p);
}
std::unique_ptr<LrSchedule> make_warmup_decay_lr(const WarmupDecayLrParams& p) {
  return std::make_unique<WarmupDecayLr>(p);
}
std::unique_ptr<LrSchedule> make_warmup_cosine_lr(const WarmupCosineLrParams& p) {
  return std::make_unique<WarmupCosineLr>(p);
}

}  // namespace strata::rt::schedule_detail
