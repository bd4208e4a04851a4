#include "group_calls.hpp"

#include <string>

namespace strata::zero {

uint64_t GroupCalls::gather(uint32_t group, uint32_t flags) {
  if (groups_.empty()) groups_.begin_gather(group, flags);  // throws: no group to gather
  const uint64_t agreed =
      sequence_.agree(SequenceOp::kGather, group, flags, reducer_.startable());
  groups_.begin_gather(group, flags);
  if ((flags & STRATA_GATHER_FOR_BACKWARD) != 0) {
    for (uint32_t p : groups_.group(group).params) {
      if (reducer_.marked(p)) {
        groups_.end_gather(group);  // the call fails as a whole (alike on every rank)
        sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
                  "gather: parameter " + params_[p].name + " of " + groups_.describe(group) +
                      " already finished its gradient in this micro-batch (grad_ready, or an "
                      "earlier release after a gather for backward)");
      }
    }
    grads_.lend(groups_.group(group).params);
  }
  return agreed;
}

void GroupCalls::undo_gather(uint32_t group) {
  grads_.unlend(groups_.group(group).params);
  groups_.end_gather(group);
}

uint64_t GroupCalls::release(uint32_t group) {
  if (groups_.empty()) groups_.end_gather(group);  // throws: no group to release
  // A group gathered for backward finishes its parameters' gradients for this micro-batch.
  const bool backward = group < groups_.size() && groups_.gathered(group) &&
                        groups_.for_backward(group);
  static const std::vector<uint32_t> kNone;
  const std::vector<uint32_t>& finishing = backward ? groups_.group(group).params : kNone;
  const uint64_t agreed =
      sequence_.agree(SequenceOp::kRelease, group, 0, reducer_.startable(finishing));
  groups_.end_gather(group);
  for (uint32_t p : finishing) reducer_.mark(p);  // already marked by grad_ready: fine
  grads_.unlend(finishing);
  return agreed;
}

void GroupCalls::end_micro_step(bool boundary) {
  if (!groups_.empty()) sequence_.agree(SequenceOp::kEndMicroStep, -1, boundary ? 1 : 0, 0);
  groups_.expect_none_gathered();
  if (boundary) sequence_.new_step();  // call numbers count from the start of each step
}

}  // namespace strata::zero
