#include "faults/activity.hpp"

#include <chrono>
#include <locale>
#include <sstream>
#include <stdexcept>

namespace strata::rt {

const char* api_call_name(ApiCall call) {
  switch (call) {
    case ApiCall::None: return "host code";
    case ApiCall::Create: return "strata_create";
    case ApiCall::Finalize: return "strata_finalize";
    case ApiCall::GradReady: return "strata_grad_ready";
    case ApiCall::Gather: return "strata_gather";
    case ApiCall::Release: return "strata_release";
    case ApiCall::Step: return "strata_step";
    case ApiCall::Destroy: return "strata_destroy";
    case ApiCall::Save: return "strata_save";
    case ApiCall::Load: return "strata_load";
    case ApiCall::Join: return "strata_join";
  }
  return "?";
}

int64_t ActivityBoard::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void ActivityBoard::enter_call(ApiCall call, int64_t arg) {
  call_arg_.store(arg, std::memory_order_relaxed);
  call_since_ns_.store(now_ns(), std::memory_order_relaxed);
  call_.store(static_cast<uint8_t>(call), std::memory_order_relaxed);
}

void ActivityBoard::leave_call() {
  last_call_.store(call_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  call_since_ns_.store(now_ns(), std::memory_order_relaxed);
  call_.store(0, std::memory_order_relaxed);
}

void ActivityBoard::set_progress(uint64_t step, uint64_t micro_step) {
  step_.store(step, std::memory_order_relaxed);
  micro_step_.store(micro_step, std::memory_order_relaxed);
}

uint64_t ActivityBoard::start_collective(const char* name) {
  collective_.store(name, std::memory_order_relaxed);
  return collectives_.fetch_add(1, std::memory_order_relaxed) + 1;
}

// wait_since_ns_ is 0 whenever no wait is in progress, so a reader never pairs a new wait with the
// start time of an old one; a reader that sees the depth before the time takes the wait as new.
void ActivityBoard::begin_wait() {
  const int64_t now = now_ns();
  if (wait_depth_.fetch_add(1, std::memory_order_acq_rel) == 0) {
    wait_since_ns_.store(now, std::memory_order_release);
  }
}

void ActivityBoard::end_wait() {
  if (wait_depth_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    wait_since_ns_.store(0, std::memory_order_release);
  }
}

bool ActivityBoard::waiting(int64_t* since_ns) const {
  if (wait_depth_.load(std::memory_order_acquire) == 0) return false;
  const int64_t since = wait_since_ns_.load(std::memory_order_acquire);
  *since_ns = since != 0 ? since : now_ns();
  return true;
}

ActivitySnapshot ActivityBoard::snapshot() const {
  ActivitySnapshot s;
  s.call = static_cast<ApiCall>(call_.load(std::memory_order_relaxed));
  s.last_call = static_cast<ApiCall>(last_call_.load(std::memory_order_relaxed));
  s.call_arg = call_arg_.load(std::memory_order_relaxed);
  s.step = step_.load(std::memory_order_relaxed);
  s.micro_step = micro_step_.load(std::memory_order_relaxed);
  s.collectives = collectives_.load(std::memory_order_relaxed);
  s.collective = collective_.load(std::memory_order_relaxed);
  int64_t since = call_since_ns_.load(std::memory_order_relaxed);
  int64_t wait_since = 0;
  s.waiting = waiting(&wait_since);
  if (s.waiting) since = wait_since;
  s.seconds = static_cast<double>(now_ns() - since) * 1e-9;
  return s;
}

// One line of '|'-separated fields; the collective name goes last as it is free text.
std::string ActivitySnapshot::encode() const {
  std::ostringstream out;
  out.imbue(std::locale::classic());  // the host may have set a locale that writes "1,5"
  out << static_cast<int>(call) << '|' << static_cast<int>(last_call) << '|' << call_arg << '|'
      << step << '|' << micro_step << '|' << collectives << '|' << (waiting ? 1 : 0) << '|'
      << seconds << '|' << collective;
  return out.str();
}

ActivitySnapshot ActivitySnapshot::decode(const std::string& text) {
  std::istringstream in(text);
  in.imbue(std::locale::classic());
  ActivitySnapshot s;
  int call = 0, last = 0, waiting = 0;
  char bar[8];
  in >> call >> bar[0] >> last >> bar[1] >> s.call_arg >> bar[2] >> s.step >> bar[3] >>
      s.micro_step >> bar[4] >> s.collectives >> bar[5] >> waiting >> bar[6] >> s.seconds >> bar[7];
  if (!in || call < 0 || call > static_cast<int>(kLastApiCall) || last < 0 ||
      last > static_cast<int>(kLastApiCall)) {
    throw std::invalid_argument("malformed activity record");
  }
  for (char c : bar) {
    if (c != '|') throw std::invalid_argument("malformed activity record");
  }
  std::getline(in, s.collective);
  s.call = static_cast<ApiCall>(call);
  s.last_call = static_cast<ApiCall>(last);
  s.waiting = waiting != 0;
  return s;
}

}  // namespace strata::rt
