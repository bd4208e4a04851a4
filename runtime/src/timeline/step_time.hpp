// Where a rank's time goes between two strata_step returns: the host's own work, and the
// runtime's calls split into waits on collectives, the optimizer, gathers and the rest
// (strata_step_result's API 1.5 fields).
//
// The host's thread marks the start and end of each runtime call and of each part inside one; a
// mark charges the time since the previous mark to whatever was running, so the parts add up to
// the wall time exactly and a wait inside a gather counts as a wait, not as gather time. Marks
// from other threads (a plugin's worker starting a collective) are ignored: their time overlaps
// the host thread's, which is what the split describes. A mark is one clock read and a few adds.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <pthread.h>

namespace strata::rt {

enum class TimePart : uint8_t { Host = 0, CommWait, Optimizer, Gather, RuntimeOther, Count };

// Seconds per part since the previous take(); the wall time is their sum.
struct StepTimes {
  std::array<double, static_cast<size_t>(TimePart::Count)> seconds{};
  double operator[](TimePart p) const { return seconds[static_cast<size_t>(p)]; }
  double wall() const {
    double sum = 0.0;
    for (double s : seconds) sum += s;
    return sum;
  }
  StepTimes& operator+=(const StepTimes& o) {
    for (size_t i = 0; i < seconds.size(); ++i) seconds[i] += o.seconds[i];
    return *this;
  }
  StepTimes& operator-=(const StepTimes& o) {
    for (size_t i = 0; i < seconds.size(); ++i) seconds[i] -= o.seconds[i];
    return *this;
  }
};

class StepTime {
 public:
  StepTime();

  // A runtime call starts on the calling thread, which is the host's thread until it ends. Returns
  // whether it was counted; only then call call_end() (a call from a second thread while one is
  // in progress is not: its time overlaps the first's).
  bool call_begin();
  void call_end();
  // A part of the current call starts (nested parts stack). Returns whether it was counted: not
  // outside a call, nor from a thread other than the one in the call. Only then call part_end().
  // Thread-safe in that sense; the rest of the class is the host thread's.
  bool part_begin(TimePart part);
  void part_end();

  // The split since the previous take() (or construction), counting up to now; starts the next.
  StepTimes take();
  // The same without starting the next: what take() would answer now.
  StepTimes peek();

 private:
  // Other threads read only owner_, which is 0 outside calls.
  bool on_call_thread() const { return owner_.load(std::memory_order_relaxed) == pthread_self(); }
  void charge(int64_t now);

  static constexpr int kMaxDepth = 8;
  std::atomic<pthread_t> owner_{0};
  int depth_ = 0;                              // 0: host code; 1: in a call; more: nested parts
  std::array<TimePart, kMaxDepth + 1> stack_{};  // stack_[depth_] is what runs now
  int64_t last_mark_ns_;
  std::array<int64_t, static_cast<size_t>(TimePart::Count)> ns_{};
};

}  // namespace strata::rt
