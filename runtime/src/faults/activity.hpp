// What this rank is doing right now, written by the threads that drive the runtime and read by the
// watchdog thread: which host API call it is in, which collective it last started, whether it is
// waiting for one, and since when. The stall inspector and the failure messages tell their story
// from it, so a stall message says "rank 2 is in host code after grad_ready('fc2.weight') at
// step 14" instead of "timeout".
//
// Writers are the host's thread (API calls) and the comm proxy (collectives, from whichever thread
// drives the comm stratum); every field is an atomic, and a reader may see a mix of two
// neighbouring states. That is fine for a diagnostic sampled once a second, and it keeps the hot
// path to a few stores. Only the wait's depth and start are ordered (acquire/release), so a wait
// is never paired with an older wait's start time.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace strata::rt {

// Which host API call a rank is in (or none: the host's own code).
enum class ApiCall : uint8_t {
  None = 0,
  Create,
  Finalize,
  GradReady,
  Gather,
  Release,
  Step,
  Destroy,
  Save,  // strata_save and strata_save_wait
  Load,
  Join,  // strata_join (API 1.12)
};
inline constexpr ApiCall kLastApiCall = ApiCall::Join;  // what a heartbeat may name

const char* api_call_name(ApiCall call);

// A copy of the board at one moment, as sent to the other ranks.
struct ActivitySnapshot {
  ApiCall call = ApiCall::None;  // the API call in progress, or None
  ApiCall last_call = ApiCall::None;
  int64_t call_arg = -1;         // the call's parameter index or group id; -1 if none
  uint64_t step = 0;             // optimizer steps taken (applied or skipped)
  uint64_t micro_step = 0;       // micro-batches completed
  uint64_t collectives = 0;      // collectives started so far (the last one's sequence number)
  std::string collective;        // name of the last collective started ("" if none yet)
  bool waiting = false;          // blocked on a collective now
  double seconds = 0.0;          // how long the current call, wait or host-code stretch has lasted

  std::string encode() const;
  // Throws std::invalid_argument on a malformed text.
  static ActivitySnapshot decode(const std::string& text);
};

class ActivityBoard {
 public:
  // Host API calls.
  void enter_call(ApiCall call, int64_t arg = -1);
  void leave_call();
  void set_progress(uint64_t step, uint64_t micro_step);

  // Collectives (the comm proxy). `name` must be a string literal.
  uint64_t start_collective(const char* name);
  void begin_wait();
  void end_wait();

  // For the watchdog: whether this rank is blocked on a collective, and since when (steady ns).
  bool waiting(int64_t* since_ns) const;
  ActivitySnapshot snapshot() const;
  // Optimizer steps taken (applied or skipped): the timeline's step of an event. Thread-safe.
  uint64_t steps_done() const { return step_.load(std::memory_order_relaxed); }

  static int64_t now_ns();

 private:
  std::atomic<uint8_t> call_{0};
  std::atomic<uint8_t> last_call_{0};
  std::atomic<int64_t> call_arg_{-1};
  std::atomic<int64_t> call_since_ns_{now_ns()};
  std::atomic<uint64_t> step_{0};
  std::atomic<uint64_t> micro_step_{0};
  std::atomic<uint64_t> collectives_{0};
  std::atomic<const char*> collective_{""};
  std::atomic<uint32_t> wait_depth_{0};
  std::atomic<int64_t> wait_since_ns_{0};
};

}  // namespace strata::rt
