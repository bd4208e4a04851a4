#include "timeline/step_time.hpp"

#include "faults/activity.hpp"

namespace strata::rt {

StepTime::StepTime() : last_mark_ns_(ActivityBoard::now_ns()) { stack_[0] = TimePart::Host; }

void StepTime::charge(int64_t now) {
  ns_[static_cast<size_t>(stack_[depth_])] += now - last_mark_ns_;
  last_mark_ns_ = now;
}

bool StepTime::call_begin() {
  // The runtime is used by one thread at a time (strata.h), so a call while another is in
  // progress comes from a host breaking that rule; it is left out rather than mixed in.
  if (depth_ == 0) {
    owner_.store(pthread_self(), std::memory_order_relaxed);
  } else if (!on_call_thread() || depth_ >= kMaxDepth) {
    return false;
  }
  charge(ActivityBoard::now_ns());
  stack_[++depth_] = TimePart::RuntimeOther;
  return true;
}

void StepTime::call_end() {
  charge(ActivityBoard::now_ns());
  if (--depth_ == 0) owner_.store(0, std::memory_order_relaxed);
}

bool StepTime::part_begin(TimePart part) {
  if (!on_call_thread() || depth_ >= kMaxDepth) return false;
  charge(ActivityBoard::now_ns());
  stack_[++depth_] = part;
  return true;
}

void StepTime::part_end() {
  charge(ActivityBoard::now_ns());
  --depth_;
}

StepTimes StepTime::peek() {
  charge(ActivityBoard::now_ns());
  StepTimes t;
  for (size_t i = 0; i < ns_.size(); ++i) t.seconds[i] = static_cast<double>(ns_[i]) * 1e-9;
  return t;
}

StepTimes StepTime::take() {
  const StepTimes t = peek();
  ns_.fill(0);
  return t;
}

}  // namespace strata::rt
