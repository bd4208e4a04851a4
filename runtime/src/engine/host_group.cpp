#include "engine/host_group.hpp"

#include "error.hpp"

#include <strata/plugin.hpp>

#include <algorithm>
#include <utility>

namespace strata::rt {
namespace {

strata_comm_caps query(const strata_comm_ops& ops, void* child, const std::string& label) {
  try {
    return sdk::Comm(&ops, child).query();
  } catch (const sdk::Error& e) {
    ops.destroy(child);
    throw Error(e.code(), label + ": " + e.what());
  }
}

// The number of elements a buffer must hold for these blocks.
uint64_t extent(const uint64_t* counts, const uint64_t* displs, int size) {
  uint64_t end = 0;
  for (int r = 0; r < size; ++r) end = std::max(end, displs[r] + counts[r]);
  return end;
}

}  // namespace

HostGroup::HostGroup(const strata_comm_ops& ops, void* child, std::string label)
    : ops_(ops), child_(child), label_(std::move(label)), caps_(query(ops, child, label_)),
      collectives_(ops, child, label_, caps_.size) {}

HostGroup::~HostGroup() { ops_.destroy(child_); }

void HostGroup::alltoallv(const void* send, const uint64_t* send_counts,
                          const uint64_t* send_displs, void* recv, const uint64_t* recv_counts,
                          const uint64_t* recv_displs, int32_t dtype) const {
  if (send_counts == nullptr || send_displs == nullptr || recv_counts == nullptr ||
      recv_displs == nullptr) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                "strata_group_alltoallv: send_counts, send_displs, recv_counts and recv_displs "
                "must each hold the group's size (" + std::to_string(caps_.size) + ") entries");
  }
  const int size = caps_.size;
  const strata_buffer s = host_buffer(send, extent(send_counts, send_displs, size), dtype);
  const strata_buffer r = host_buffer(recv, extent(recv_counts, recv_displs, size), dtype);
  try {
    sdk::Comm(&ops_, child_).alltoallv(s, send_counts, send_displs, r, recv_counts, recv_displs);
  } catch (const sdk::Error& e) {
    throw Error(e.code(), label_ + ": " + e.what());
  }
}

}  // namespace strata::rt
