// The comm stratum's check bodies (check_comm in comm_checks.cpp runs them in order). Each runs in
// every rank, makes the same collectives on every rank whatever it finds, and returns this rank's
// verdict with the first difference it saw.
#pragma once

#include "comm_session.hpp"

#include <cstdint>
#include <memory>
#include <vector>
#include <string>

namespace strata::plugin_check::comm {

// Size classes: empty, one element, a count that no world size divides, a few thousand, and
// just past 1 MiB of f32 (2^18 + 3 elements), so that the in-tree plugins' 1 MiB pieces and
// shared-memory rounds are crossed.
inline constexpr uint64_t kLargeCount = (uint64_t{1} << 18) + 3;
inline constexpr uint64_t kCounts[] = {0, 1, 7, 3001, kLargeCount};

// The per-rank block of collectives whose payload is `world` blocks (reduce_scatter's send,
// allgather's receive buffer): in the large class the ranks share the ~2^18 elements, which still
// cross the boundaries (and 4 ranks' worth of 2^18 each would only make the run longer).
inline uint64_t block_count(uint64_t count, int world) {
  return count == kLargeCount ? count / static_cast<uint64_t>(world) + 3 : count;
}

// One way to call a collective: blocking or not, in place or not.
struct Variant {
  Mode mode;
  bool in_place;
};

// The variants size class kCounts[index] runs. Every combination of mode and placement is
// covered, but not at every small count: the small classes alternate between {blocking out of
// place, non-blocking in place} and {blocking in place, non-blocking out of place}, the large one
// runs all four. Plugins whose collectives cost ~10 ms each (Gloo over TCP with 4 ranks on 2
// cores) would otherwise take most of a minute. Without non-blocking: both placements, blocking.
inline std::vector<Variant> variants(size_t index, const std::vector<Mode>& modes) {
  if (modes.size() == 1) return {{Mode::Blocking, false}, {Mode::Blocking, true}};
  if (kCounts[index] == kLargeCount) {
    return {{Mode::Blocking, false},
            {Mode::Blocking, true},
            {Mode::Nonblocking, false},
            {Mode::Nonblocking, true}};
  }
  const bool odd = index % 2 == 1;
  return {{Mode::Blocking, odd}, {Mode::Nonblocking, !odd}};
}

// "count 7, non-blocking, in place"
std::string where(uint64_t count, Mode mode, const char* placement);

// collective_checks.cpp: each against the local reference, every size class and mode, out of
// place and in place.
Verdict check_allreduce(const Session& s, int32_t dtype, int32_t op);
Verdict check_reduce_scatter(const Session& s, int32_t dtype, int32_t op);
Verdict check_allgather(const Session& s, int32_t dtype);
Verdict check_allgatherv(const Session& s, int32_t dtype);
Verdict check_broadcast(const Session& s, int32_t dtype);

// optional_checks.cpp: ABI 1.10's optional members, where the caps offer them. alltoallv with
// uneven blocks (zeros included) and gaps, against the local reference; split into two halves
// (ranks below size / 2, the rest) with an allreduce on each, then the last rank passing
// STRATA_COMM_SPLIT_NONE.
Verdict check_alltoallv(const Session& s, int32_t dtype);
Verdict check_split(const Session& s);

// protocol_checks.cpp
Verdict check_caps(const Session& s);
Verdict check_barrier(const Session& s);
Verdict check_nonblocking_ordering(const Session& s);
Verdict check_bad_arguments(const Session& s);
// Ends with `instance` (the session's) destroyed.
Verdict check_mismatched_counts(const Session& s, std::unique_ptr<CommInstance>& instance);

}  // namespace strata::plugin_check::comm
