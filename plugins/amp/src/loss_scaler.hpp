// fp16 loss scaling with DeepSpeed's rules (deepspeed/runtime/fp16/loss_scaler.py): a static
// scale (LossScaler) or the dynamic one (DynamicLossScaler.update_scale). A plain value class with
// no plugin dependencies, so the rules can be tested on their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::amp {

struct LossScalerConfig {
  double static_scale = 0.0;       // > 0: this fixed scale; 0: dynamic scaling
  double initial_scale = 65536.0;  // dynamic: 2^initial_scale_power
  int64_t window = 1000;           // loss_scale_window, >= 1
  int64_t hysteresis = 2;          // DeepSpeed's delayed_shift, >= 1
  bool consecutive_hysteresis = false;
  double min_scale = 1.0;  // min_loss_scale, > 0
};

// What one update did.
enum class ScaleChange {
  kept,             // no change (a clean step inside the window, or a static scale)
  hysteresis_used,  // overflow absorbed by the hysteresis counter; the scale stays
  decreased,        // overflow: scale = max(scale / 2, min)
  doubled,          // a full window of clean steps since the last overflow
  at_minimum,       // overflow with the scale already at the minimum: DeepSpeed raises here
};

// One update as the history keeps it: the 1-based step, the scale that step was attempted with,
// and whether it overflowed.
struct ScaleRecord {
  uint64_t step;
  double scale;
  bool overflow;
};

// Everything update() reads and writes besides the config: what a checkpoint saves so that a
// resumed run scales exactly as an uninterrupted one (scaler_state.cpp writes it as JSON).
struct LossScalerState {
  double scale = 0.0;
  int64_t hysteresis = 0;      // DeepSpeed's cur_hysteresis
  int64_t iteration = 0;       // DeepSpeed's cur_iter
  int64_t last_overflow = -1;  // DeepSpeed's last_overflow_iter
  std::vector<ScaleRecord> history;  // oldest first, at most kHistory (for messages only)
};

class LossScaler {
 public:
  static constexpr std::size_t kHistory = 16;

  explicit LossScaler(const LossScalerConfig& config);

  double scale() const { return scale_; }
  bool dynamic() const { return dynamic_; }
  int64_t hysteresis_left() const { return hysteresis_; }
  uint64_t steps() const { return static_cast<uint64_t>(iteration_); }

  // Once per optimizer step, skipped or not. After at_minimum the state is as before the call
  // (as when DeepSpeed's exception leaves update_scale), except that the history records it.
  ScaleChange update(bool overflow);

  const LossScalerConfig& config() const { return config_; }
  LossScalerState state() const;
  // Replaces the counters and scale with a saved state; the config stays this scaler's. Throws
  // std::invalid_argument naming the field for values update() could not continue from.
  void restore(const LossScalerState& state);

  // The last kHistory updates, oldest first.
  std::vector<ScaleRecord> history() const;
  // The history as "(step, scale, overflow|ok) ..." for logs and error messages.
  std::string history_text() const;

 private:
  void remember(bool overflow);

  LossScalerConfig config_;
  bool dynamic_;
  double scale_;
  int64_t hysteresis_;
  int64_t iteration_ = 0;             // DeepSpeed's cur_iter
  int64_t last_overflow_ = -1;        // DeepSpeed's last_overflow_iter
  std::vector<ScaleRecord> history_;  // ring of kHistory records, next_ is the oldest when full
  std::size_t next_ = 0;
};

}  // namespace strata::amp
