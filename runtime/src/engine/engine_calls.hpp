// The engine's ways of running a host call's work, shared by its source files: run_agreed (every
// rank learns whether any failed), guarded (a failure ends this rank's run) and phase (one timed
// phase of the step); and new_caps.
#pragma once

#include "engine/engine.hpp"
#include "error.hpp"
#include "engine/work_scope.hpp"

#include <exception>
#include <string>
#include <type_traits>
#include <vector>

namespace strata::rt {

// A caps struct of the runtime's size, zeroed, for a plugin's query to fill.
template <class Caps>
Caps new_caps() {
  Caps caps{};
  caps.struct_size = sizeof(Caps);
  return caps;
}

template <class Body>
void Engine::phase(const char* name, TimePart part, Body&& body) {
  const WorkScope scope = WorkScope::phase(step_time_, timeline_.get(), name, part);
  body();
}

template <class Body>
void Engine::run_agreed(const char* phase, Body&& body) {
  std::string failure;
  strata_status code = STRATA_OK;
  try {
    body();
  } catch (const Error& e) {
    failure = e.what();
    code = e.code();
  } catch (const std::exception& e) {
    failure = e.what();
    code = STRATA_ERR_INTERNAL;
  }
  const int32_t mine = failure.empty() ? 0 : 1;
  int32_t any = 0;
  collectives_->allreduce(&mine, &any, 1, STRATA_I32, STRATA_MAX);
  if (any == 0) return;
  // Every rank joins this gather, the failed ones too, so a healthy rank can name who failed.
  const std::vector<std::string> failures = collectives_->allgather_strings(failure);
  if (!failure.empty()) throw Error(code, failure);
  for (size_t rank = 0; rank < failures.size(); ++rank) {
    if (!failures[rank].empty()) {
      throw Error(STRATA_ERR_COMM, std::string(phase) + " failed on rank " + std::to_string(rank) +
                                       ": " + failures[rank]);
    }
  }
}

template <class Body>
auto Engine::guarded(ApiCall call, int64_t arg, Body&& body, bool measured) {
  if (failure_) {
    throw Error(failure_->code(), std::string("an earlier call failed on this rank, so the runtime "
                                              "cannot continue: ") + failure_->what());
  }
  activity_.enter_call(call, arg);
  const TimePart part =
      call == ApiCall::Gather || call == ApiCall::Release ? TimePart::Gather : TimePart::RuntimeOther;
  try {
    const WorkScope scope = measured ? WorkScope::call(step_time_, timeline_.get(), api_call_name(call), arg, part)
                                     : WorkScope::none(step_time_);
    if constexpr (std::is_void_v<decltype(body())>) {
      body();
      activity_.leave_call();
    } else {
      auto result = body();
      activity_.leave_call();
      return result;
    }
  } catch (const std::exception& e) {
    activity_.leave_call();
    const auto* error = dynamic_cast<const Error*>(&e);
    failure_ = Error(error != nullptr ? error->code() : STRATA_ERR_INTERNAL, e.what());
    if (watchdog_) {
      watchdog_->local_failure(std::string(api_call_name(call)) + " failed at step " +
                               std::to_string(global_steps_) + ": " + e.what());
    }
    throw;
  }
}

}  // namespace strata::rt
