// The step split the engine reports (strata_step_result's times, API 1.5) and DeepSpeed's
// wall_clock_breakdown log line.
#include "engine/engine.hpp"
#include "log.hpp"

namespace strata::rt {

void Engine::report_step_time(strata_step_result& result) {
  // A wall_clock_breakdown line goes out before the split is taken, so that writing it (a pipe to
  // the launcher, which may block) counts in this step's time, which ends when strata_step returns.
  // The line holds the window's steps up to now; what follows it starts the next window.
  const bool print = manifest_.wall_clock_breakdown && result.outcome != STRATA_STEP_ACCUMULATED &&
                     global_steps_ % manifest_.steps_per_print == 0;
  StepTimes printed;  // this step's part of the line
  if (print) {
    printed = step_time_.peek();
    StepTimes window = breakdown_;
    window += printed;
    log_breakdown(window);
    breakdown_ = StepTimes{};
  }
  const StepTimes t = step_time_.take();
  result.wall_seconds = t.wall();
  result.host_seconds = t[TimePart::Host];
  result.comm_wait_seconds = t[TimePart::CommWait];
  result.optimizer_seconds = t[TimePart::Optimizer];
  result.gather_seconds = t[TimePart::Gather];
  result.runtime_other_seconds = t[TimePart::RuntimeOther];
  if (manifest_.wall_clock_breakdown) {
    breakdown_ += t;
    breakdown_ -= printed;
  }
}

// DeepSpeed's wall_clock_breakdown, as milliseconds per optimizer step over the last
// steps_per_print steps, on every rank (a slow rank is the point of looking).
void Engine::log_breakdown(const StepTimes& window) const {
  const double per_step = 1e3 / static_cast<double>(manifest_.steps_per_print);
  logger().info("time per step (ms), steps {}-{}: wall {:.3f} = host {:.3f} + comm wait {:.3f} + "
                "optimizer {:.3f} + gather {:.3f} + other runtime {:.3f}",
                global_steps_ - manifest_.steps_per_print + 1, global_steps_,
                window.wall() * per_step, window[TimePart::Host] * per_step,
                window[TimePart::CommWait] * per_step, window[TimePart::Optimizer] * per_step,
                window[TimePart::Gather] * per_step, window[TimePart::RuntimeOther] * per_step);
}

}  // namespace strata::rt
