// Stages 2-3: gather, release and end_micro_step issue collectives, so every rank must make the
// same calls in the same order. Each such call first allgathers what every rank is doing (a few
// int64) and fails on every rank alike, naming ranks and groups, when they differ: an error
// instead of a hang, DeepSpeed's most reported stage-3 failure.
//
// The same allgather also carries how many gradient buckets each rank could start now; callers
// start the minimum over ranks, so bucket reductions interleave with these checks identically on
// every rank (collectives must be issued in one order everywhere).
#pragma once

#include "comm_link.hpp"
#include "group_state.hpp"

#include <cstdint>

namespace strata::zero {

enum class SequenceOp : int64_t { kGather = 1, kRelease = 2, kEndMicroStep = 3 };

class SequenceCheck {
 public:
  SequenceCheck(CommLink& comm, const GroupState& groups) : comm_(comm), groups_(groups) {}

  // Collective. Throws STRATA_ERR_MISMATCH on every rank if any rank's (op, group, flags) or call
  // count differs; otherwise returns the smallest `startable` over ranks.
  uint64_t agree(SequenceOp op, int64_t group, uint32_t flags, uint64_t startable);
  // Call numbers count from the start of each optimizer step.
  void new_step() { calls_ = 0; }

 private:
  std::string describe(const int64_t* entry) const;

  CommLink& comm_;
  const GroupState& groups_;
  int64_t calls_ = 0;
};

}  // namespace strata::zero
