// A stretch of the runtime's own work on the host's thread, measured once for both of its
// readers: the step's time split (StepTime, as `part`) and the timeline (a span named `name` in
// `category`, when one is recorded). RAII, so a phase that throws is still closed.
#pragma once

#include "timeline/step_time.hpp"
#include "timeline/timeline.hpp"

#include <cstdint>

namespace strata::rt {

class WorkScope {
 public:
  // A host API call (the split's RuntimeOther unless `part` says otherwise, as for gathers).
  static WorkScope call(StepTime& time, Timeline* timeline, const char* name, int64_t index,
                        TimePart part = TimePart::RuntimeOther) {
    return WorkScope(time, timeline, "api", name, index, part, true);
  }
  // Measures nothing: for a stretch that an enclosing scope already measures.
  static WorkScope none(StepTime& time) {
    return WorkScope(time, nullptr, "", "", -1, TimePart::RuntimeOther, false, false);
  }
  // A phase inside a call.
  static WorkScope phase(StepTime& time, Timeline* timeline, const char* name, TimePart part) {
    return WorkScope(time, timeline, "step", name, -1, part, false);
  }

  ~WorkScope() {
    if (timeline_ != nullptr) timeline_->close(open_);
    if (part_counted_) time_.part_end();
    if (call_counted_) time_.call_end();
  }
  WorkScope(const WorkScope&) = delete;
  WorkScope& operator=(const WorkScope&) = delete;

 private:
  WorkScope(StepTime& time, Timeline* timeline, const char* category, const char* name,
            int64_t index, TimePart part, bool is_call, bool active = true)
      : time_(time), timeline_(timeline) {
    if (!active) return;
    call_counted_ = is_call && time_.call_begin();
    if (!is_call || part != TimePart::RuntimeOther) part_counted_ = time_.part_begin(part);
    // Open, not recorded at the end: a rank that fails inside still shows where it was.
    if (timeline_ != nullptr) open_ = timeline_->open(category, name, index);
  }

  StepTime& time_;
  Timeline* timeline_;
  Timeline::Open open_ = 0;
  bool call_counted_ = false;
  bool part_counted_ = false;
};

}  // namespace strata::rt
