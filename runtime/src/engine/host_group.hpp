// A sub-group of the ranks for the host's own collectives (API 1.13, strata_group_create): an
// instance the comm stratum's split made (ABI 1.10), reached through the tracked proxy like the
// world (stall reports, timeline, step time), with the runtime's blocking host-buffer collectives
// over it. Owned by the Engine, which destroys what the host left at strata_destroy.
#pragma once

#include "engine/collectives.hpp"

#include <strata/plugin_api.h>

#include <cstdint>
#include <string>

namespace strata::rt {

class HostGroup {
 public:
  // `ops`/`child`: the tracked proxy's table and the sub-group instance its split returned (owned
  // from here: destroyed with ops.destroy). `label` names the comm plugin in errors.
  HostGroup(const strata_comm_ops& ops, void* child, std::string label);
  ~HostGroup();
  HostGroup(const HostGroup&) = delete;
  HostGroup& operator=(const HostGroup&) = delete;

  int32_t rank() const { return caps_.rank; }
  int32_t size() const { return caps_.size; }
  const Collectives& collectives() const { return collectives_; }
  // Blocking; counts and displacements in elements of `dtype` (strata_group_alltoallv).
  void alltoallv(const void* send, const uint64_t* send_counts, const uint64_t* send_displs,
                 void* recv, const uint64_t* recv_counts, const uint64_t* recv_displs,
                 int32_t dtype) const;

 private:
  const strata_comm_ops& ops_;
  void* child_;
  std::string label_;
  strata_comm_caps caps_{};
  Collectives collectives_;
};

}  // namespace strata::rt
