// What the plugin's own exchanges over Gloo's unbound buffers share: the slot prefixes that keep
// their messages apart from each other and from Gloo's collectives (which use 0x01-0x08,
// gloo/types.h), and the check after each wait.
#pragma once

#include <gloo/common/error.h>

#include <cstdint>
#include <string>

namespace strata::allreduce_gloo {

inline constexpr uint8_t kAgreementSlotPrefix = 0x41;          // agreement.cpp
inline constexpr uint8_t kRingReduceScatterSlotPrefix = 0x52;  // ring_reduce_scatter.cpp
inline constexpr uint8_t kDirectAllreduceSlotPrefix = 0x44;    // direct_allreduce.cpp

// Gloo's waits throw on a timeout or a closed connection and return false when aborted; for that
// case, a gloo::IoException("<what> was aborted") for the plugin's error path (errors.hpp).
// Callers build `what` only on that path: `if (!buffer->waitRecv(t)) throw_aborted(...)`.
[[noreturn]] inline void throw_aborted(const std::string& what) {
  throw gloo::IoException(what + " was aborted");
}

}  // namespace strata::allreduce_gloo
