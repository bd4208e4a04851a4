// DeepSpeed's learning-rate schedules (deepspeed/runtime/lr_schedules.py, DeepSpeed 0.19.8):
// WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle and LRRangeTest, with DeepSpeed's parameter
// names, defaults and formulas, for one parameter group.
//
// A schedule is a pure function of `last_batch_iteration`, DeepSpeed's scheduler state: -1 right
// after the scheduler's construction, +1 after every applied optimizer step (DeepSpeed calls
// scheduler.step() after each step that was not skipped for an fp16 overflow). lr(i) is the lr the
// optimizer holds once the scheduler has reached last_batch_iteration == i, i.e. the lr the next
// optimizer step uses.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace strata::rt {

// The optimizer's configured lr and beta1/momentum (NaN if it has none).
struct OptimizerDefaults {
  double lr;
  double momentum;
};

class LrSchedule {
 public:
  virtual ~LrSchedule() = default;
  // The lr the optimizer holds after `last_batch_iteration` scheduler steps (-1: right after
  // construction). Any value below -1 is treated as -1.
  virtual double lr(int64_t last_batch_iteration) const = 0;
  // The momentum (beta1) likewise; NaN when the schedule leaves momentum alone.
  virtual double momentum(int64_t last_batch_iteration) const;
  // Adam's beta2 likewise; NaN when the schedule leaves it alone. Only OneCycle with momentum
  // cycling sets it: DeepSpeed writes betas = (momentum, 0.99), so beta2 becomes 0.99.
  virtual double beta2(int64_t last_batch_iteration) const;
  // DeepSpeed's type name, e.g. "WarmupLR".
  virtual const char* type() const = 0;
};

// Parses a manifest's "scheduler" block ({"type": T, "params": {...}}). Errors are
// strata::rt::Error (STRATA_ERR_INVALID_ARGUMENT) naming `source` (the manifest path) and the JSON
// path, e.g. "job.json: scheduler.params.warmup_num_steps: expected a positive integer, got -3".
std::unique_ptr<LrSchedule> make_lr_schedule(const nlohmann::json& block, const std::string& source,
                                             OptimizerDefaults defaults);

}  // namespace strata::rt
