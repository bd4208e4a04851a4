// The five schedules' settled parameters (after DeepSpeed's defaults, clamps and fallbacks),
// shared by the parser (lr_schedule_parse.cpp) and the formulas (warmup_schedules.cpp,
// cycle_schedules.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "schedule/lr_schedule.hpp"

namespace strata::rt::schedule_detail {

enum class WarmupType { Log, Linear };

// WarmupLR: min_lrs, max_lrs, warmup_num_steps (already max(2, n)), warmup_type.
struct WarmupLrParams {
  double min_lr;
  double max_lr;
  int64_t warmup_num_steps;
  WarmupType warmup_type;
};

// WarmupDecayLR: WarmupLR's plus total_num_steps.
struct WarmupDecayLrParams {
  WarmupLrParams warmup;
  int64_t total_num_steps;
};

// WarmupCosineLR: org_lrs (the optimizer's own lr), the ratios, warmup_num_steps (max(2, n)).
struct WarmupCosineLrParams {
  double org_lr;
  int64_t total_num_steps;
  double warmup_min_ratio;
  int64_t warmup_num_steps;
  double cos_min_ratio;
  WarmupType warmup_type;
};

// OneCycle, after _initialize_cycle/_initialize_lr/_initialize_momentum: the step sizes as
// floats, second_stair_count already defaulted to first_stair_count, the skip_*_decay flags.
struct OneCycleParams {
  double min_lr;
  double max_lr;
  double decay_lr_rate;
  double first_step_size;
  double second_step_size;
  int64_t first_stair_count;
  int64_t second_stair_count;
  double decay_step_size;
  bool skip_lr_decay;
  bool cycle_momentum;  // false also when the optimizer has no momentum to cycle
  double min_mom;
  double max_mom;
  double decay_mom_rate;
  bool skip_mom_decay;
};

// LRRangeTest.
struct LrRangeTestParams {
  double min_lr;
  int64_t step_size;
  double step_rate;
  bool staircase;
};

std::unique_ptr<LrSchedule> make_warmup_lr(const WarmupLrParams& p);
std::unique_ptr<LrSchedule> make_warmup_decay_lr(const WarmupDecayLrParams& p);
std::unique_ptr<LrSchedule> make_warmup_cosine_lr(const WarmupCosineLrParams& p);
std::unique_ptr<LrSchedule> make_one_cycle(const OneCycleParams& p);
std::unique_ptr<LrSchedule> make_lr_range_test(const LrRangeTestParams& p);

}  // namespace strata::rt::schedule_detail
