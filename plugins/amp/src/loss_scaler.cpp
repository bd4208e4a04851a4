#include "loss_scaler.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace strata::amp {

LossScaler::LossScaler(const LossScalerConfig& config)
    : config_(config),
      dynamic_(config.static_scale == 0.0),
      scale_(dynamic_ ? config.initial_scale : config.static_scale),
      hysteresis_(config.hysteresis) {
  history_.reserve(kHistory);
}

ScaleChange LossScaler::update(bool overflow) {
  remember(overflow);
  if (!dynamic_) {  // DeepSpeed's static LossScaler.update_scale does nothing
    ++iteration_;
    return ScaleChange::kept;
  }
  ScaleChange change = ScaleChange::kept;
  if (overflow) {
    if (config_.hysteresis == 1 || hysteresis_ == 1) {
      // Exact comparison, as DeepSpeed's `cur_scale == min_scale`: halving from a power of two
      // lands on a power-of-two minimum exactly, and max() below clamps to it otherwise.
      if (scale_ == config_.min_scale) return ScaleChange::at_minimum;
      scale_ = std::max(scale_ / 2.0, config_.min_scale);
      change = ScaleChange::decreased;
    } else {
      --hysteresis_;
      change = ScaleChange::hysteresis_used;
    }
    last_overflow_ = iteration_;
  } else {
    if (config_.consecutive_hysteresis) hysteresis_ = config_.hysteresis;
    const int64_t stable = iteration_ - last_overflow_ - 1;
    if (stable > 0 && stable % config_.window == 0) {
      if (!config_.consecutive_hysteresis) hysteresis_ = config_.hysteresis;
      scale_ *= 2.0;
      change = ScaleChange::doubled;
    }
  }
  ++iteration_;
  return change;
}

void LossScaler::remember(bool overflow) {
  const ScaleRecord record{static_cast<uint64_t>(iteration_) + 1, scale_, overflow};
  if (history_.size() < kHistory) {
    history_.push_back(record);
  } else {
    history_[next_] = record;
    next_ = (next_ + 1) % kHistory;
  }
}

LossScalerState LossScaler::state() const {
  return {scale_, hysteresis_, iteration_, last_overflow_, history()};
}

void LossScaler::restore(const LossScalerState& state) {
  if (!std::isfinite(state.scale) || state.scale <= 0.0) {
    throw std::invalid_argument("scale: expected a finite number > 0, got " +
                                std::to_string(state.scale));
  }
  if (dynamic_ && state.hysteresis < 1) {
    throw std::invalid_argument("hysteresis: expected >= 1, got " +
                                std::to_string(state.hysteresis));
  }
  if (state.iteration < 0) {
    throw std::invalid_argument("iteration: expected >= 0, got " +
                                std::to_string(state.iteration));
  }
  if (state.last_overflow < -1 || state.last_overflow >= state.iteration) {
    throw std::invalid_argument("last_overflow: expected -1 or an iteration below " +
                                std::to_string(state.iteration) + ", got " +
                                std::to_string(state.last_overflow));
  }
  scale_ = state.scale;
  hysteresis_ = state.hysteresis;
  iteration_ = state.iteration;
  last_overflow_ = state.last_overflow;
  const size_t keep = std::min(state.history.size(), kHistory);
  history_.assign(state.history.end() - static_cast<std::ptrdiff_t>(keep), state.history.end());
  next_ = 0;
}

std::vector<ScaleRecord> LossScaler::history() const {
  std::vector<ScaleRecord> ordered(history_.begin() + static_cast<std::ptrdiff_t>(next_),
                                   history_.end());
  ordered.insert(ordered.end(), history_.begin(),
                 history_.begin() + static_cast<std::ptrdiff_t>(next_));
  return ordered;
}

std::string LossScaler::history_text() const {
  std::string text;
  for (const ScaleRecord& r : history()) {
    char item[96];
    std::snprintf(item, sizeof item, "%s(%llu, %.17g, %s)", text.empty() ? "" : " ",
                  static_cast<unsigned long long>(r.step), r.scale, r.overflow ? "overflow" : "ok");
    text += item;
  }
  return text;
}

}  // namespace strata::amp
