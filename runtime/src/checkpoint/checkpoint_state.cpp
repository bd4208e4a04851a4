#include "checkpoint/checkpoint_state.hpp"

#include "device/cuda_device.hpp"
#include "error.hpp"

#include <cstring>

namespace strata::rt {
namespace {

strata_state_io_args io_args(uint32_t shard, size_t slot, uint64_t first, uint64_t count,
                             float* data) {
  strata_state_io_args a{};
  a.struct_size = sizeof(a);
  a.shard = shard;
  a.slot = static_cast<uint32_t>(slot - 1);  // the plugin's slots follow "master"
  a.first = first;
  a.count = count;
  a.data = data;
  return a;
}

}  // namespace

std::vector<std::string> checkpoint_slots(const PluginInstance<strata_offload_ops>& offload,
                                          const char* what) {
  const strata_offload_ops& ops = offload.ops();
  if (ops.state_slots == nullptr || ops.read_state == nullptr || ops.write_state == nullptr) {
    throw Error(STRATA_ERR_UNSUPPORTED,
                std::string(what) + ": " + offload.label() + " cannot hand out its optimizer "
                "state (it has no state_slots/read_state/write_state, ABI 1.6), so a checkpoint "
                "cannot hold it; use an offload plugin built against ABI 1.6 or later");
  }
  strata_state_slots slots{};
  slots.struct_size = sizeof(slots);
  offload.call("state_slots", &strata_offload_ops::state_slots, &slots);
  std::vector<std::string> names{ckpt::kMasterSlot};
  for (uint32_t i = 0; i < slots.count; ++i) {
    const char* name = slots.names != nullptr ? slots.names[i] : nullptr;
    if (name == nullptr || name[0] == '\0' || std::string(name) == ckpt::kMasterSlot) {
      throw Error(STRATA_ERR_INTERNAL, offload.label() + ": state_slots: slot " +
                                           std::to_string(i) + " has no usable name");
    }
    names.emplace_back(name);
  }
  return names;
}

std::vector<SavedRange> saved_ranges(std::span<const strata_shard> shards, bool replicated,
                                     int rank, int world) {
  std::vector<SavedRange> out;
  for (uint32_t i = 0; i < shards.size(); ++i) {
    const strata_shard& s = shards[i];
    uint64_t first = 0;
    uint64_t count = s.count;
    if (replicated && world > 1) {
      const uint64_t n = static_cast<uint64_t>(world);
      const uint64_t r = static_cast<uint64_t>(rank);
      first = s.count * r / n;
      count = s.count * (r + 1) / n - first;
    }
    if (count == 0) continue;
    out.push_back({{s.param_index, s.offset + first, count}, i, first});
  }
  return out;
}

void copy_state_out(std::span<const strata_shard> shards, const std::vector<SavedRange>& ranges,
                    size_t slots, const PluginInstance<strata_offload_ops>& offload,
                    const strata_device& device, float* out) {
  for (const SavedRange& r : ranges) {
    const uint64_t n = r.range.count;
    const strata_shard& s = shards[r.shard];
    cuda::copy(out, s.master + r.first, n * sizeof(float), device, "save: masters");
    out += n;
    for (size_t slot = 1; slot < slots; ++slot) {
      const strata_state_io_args args = io_args(r.shard, slot, r.first, n, out);
      offload.call("read_state", &strata_offload_ops::read_state, &args);
      out += n;
    }
  }
}

void write_shard_state(std::span<const strata_shard> shards, uint32_t shard, size_t slot,
                       uint64_t first, uint64_t count, const float* values,
                       const PluginInstance<strata_offload_ops>& offload,
                       const strata_device& device) {
  if (slot == 0) {
    const strata_shard& s = shards[shard];
    cuda::copy(s.master + first, values, count * sizeof(float), device, "load: masters");
    return;
  }
  const strata_state_io_args args = io_args(shard, slot, first, count, const_cast<float*>(values));
  offload.call("write_state", &strata_offload_ops::write_state, &args);
}

}  // namespace strata::rt
