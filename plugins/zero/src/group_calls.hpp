// Stages 2-3: gather, release and end_micro_step are collective (bucket reductions start at them,
// and stage 3 moves parameters), so every rank must make them in the same order. This is what
// the two stages do alike at those calls, on the gradient side: the sequence check
// (sequence_check.hpp), the group bookkeeping, lending gradient buffers for backward and
// finishing them at release, and the number of buckets every rank can start afterwards. The
// stage then does its own part (stage 3: the parameters) and starts the agreed buckets.
#pragma once

#include "comm_link.hpp"
#include "grad_partition.hpp"
#include "group_state.hpp"
#include "param.hpp"
#include "partition_reducer.hpp"
#include "sequence_check.hpp"

#include <cstdint>
#include <vector>

namespace strata::zero {

class GroupCalls {
 public:
  // Everything passed must outlive this object (the stage owns it all).
  GroupCalls(CommLink& comm, GroupState& groups, const std::vector<ParamRecord>& params,
             PartitionReducer& reducer, GradPartition& grads)
      : sequence_(comm, groups), groups_(groups), params_(params), reducer_(reducer),
        grads_(grads) {}

  // Agrees on the call, records the gather and, for backward, lends the group's gradient
  // buffers. Returns how many buckets to start once the stage's own part is done.
  uint64_t gather(uint32_t group, uint32_t flags);
  // Takes back gather() when the stage's own part failed (alike on every rank).
  void undo_gather(uint32_t group);
  // Agrees on the call and records the release; after a gather for backward the group's
  // gradients are finished for this micro-batch. Returns how many buckets to start.
  uint64_t release(uint32_t group);
  // Agrees on the call (when groups exist) and checks that no group is still gathered.
  void end_micro_step(bool boundary);

 private:
  SequenceCheck sequence_;
  GroupState& groups_;
  const std::vector<ParamRecord>& params_;
  PartitionReducer& reducer_;
  GradPartition& grads_;
};

}  // namespace strata::zero
