#include "group_state.hpp"

#include <strata/plugin.hpp>

#include <utility>

namespace strata::zero {

using sdk::fail;

GroupState::GroupState(std::vector<GroupRecord> groups, size_t params)
    : groups_(std::move(groups)), group_of_(params, kNoGroup), gathered_(groups_.size(), 0),
      backward_(groups_.size(), 0) {
  for (uint32_t g = 0; g < groups_.size(); ++g) {
    for (uint32_t p : groups_[g].params) group_of_[p] = g;
  }
}

std::string GroupState::describe(int64_t g) const {
  if (g < 0 || static_cast<uint64_t>(g) >= groups_.size()) return "group #" + std::to_string(g);
  return "group '" + groups_[static_cast<size_t>(g)].name + "' (#" + std::to_string(g) + ")";
}

void GroupState::check_id(const char* call, uint32_t g) const {
  if (g >= groups_.size()) {
    fail(STRATA_ERR_INVALID_ARGUMENT, std::string(call) + ": no group with id " +
                                          std::to_string(g) + " (" +
                                          std::to_string(groups_.size()) + " defined)");
  }
}

void GroupState::begin_gather(uint32_t g, uint32_t flags) {
  check_id("gather", g);
  if (gathered_[g]) {
    fail(STRATA_ERR_INVALID_ARGUMENT,
         "gather: " + describe(g) + " is already gathered; release it first");
  }
  gathered_[g] = 1;
  backward_[g] = (flags & STRATA_GATHER_FOR_BACKWARD) != 0 ? 1 : 0;
}

void GroupState::end_gather(uint32_t g) {
  check_id("release", g);
  if (!gathered_[g]) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "release: " + describe(g) + " is not gathered");
  }
  gathered_[g] = 0;
  backward_[g] = 0;
}

void GroupState::expect_none_gathered() const {
  for (uint32_t g = 0; g < groups_.size(); ++g) {
    if (gathered_[g]) {
      fail(STRATA_ERR_INVALID_ARGUMENT,
           "end_micro_step: " + describe(g) + " is still gathered at the end of the micro-batch; "
           "release every gathered group before the step");
    }
  }
}

}  // namespace strata::zero
