// Parameter groups (ABI 1.1) and which of them the host has gathered right now. Every stage keeps
// one; the checks are local and, given the same call sequence, fail alike on every rank.
#pragma once

#include "param.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace strata::zero {

class GroupState {
 public:
  GroupState() = default;
  GroupState(std::vector<GroupRecord> groups, size_t params);

  size_t size() const { return groups_.size(); }
  size_t params() const { return group_of_.size(); }
  bool empty() const { return groups_.empty(); }
  const GroupRecord& group(uint32_t g) const { return groups_[g]; }
  const std::vector<GroupRecord>& all() const { return groups_; }
  // kNoGroup for a parameter in no group.
  uint32_t group_of(uint32_t param) const { return group_of_[param]; }
  // "group 'fc1' (#0)", or "group #7" for an id out of range (a peer's bad id).
  std::string describe(int64_t g) const;

  bool gathered(uint32_t g) const { return gathered_[g] != 0; }
  bool for_backward(uint32_t g) const { return backward_[g] != 0; }
  // Throws STRATA_ERR_INVALID_ARGUMENT if `g` is out of range or already gathered.
  void begin_gather(uint32_t g, uint32_t flags);
  // Throws if `g` is out of range or not gathered.
  void end_gather(uint32_t g);
  // Throws naming the first group still gathered (at the end of a micro-batch).
  void expect_none_gathered() const;

 private:
  void check_id(const char* call, uint32_t g) const;

  std::vector<GroupRecord> groups_;
  std::vector<uint32_t> group_of_;
  std::vector<uint8_t> gathered_, backward_;
};

}  // namespace strata::zero
