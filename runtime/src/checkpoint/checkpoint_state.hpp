// What this rank's part of a checkpoint is, and moving it between the strata and memory: the
// ranges it saves (its owned shards, or its slice of them when every rank holds the whole model),
// the slots ("master", then the optimizer's per-element state), and the copies both ways. The
// sharding plugin's shards give the masters; the offload plugin's read_state/write_state (ABI 1.6)
// give the optimizer state, wherever it lives (memory or NVMe).
#pragma once

#include "checkpoint/format.hpp"
#include "loader/plugin_instance.hpp"

#include <strata/plugin_api.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace strata::rt {

// One saved range and where it lies in this rank's shard list.
struct SavedRange {
  ckpt::Range range;
  uint32_t shard = 0;  // index into the owned shards
  uint64_t first = 0;  // its first element within that shard
};

// The slots of the job's optimizer state: "master" first, then the offload plugin's. Throws,
// naming the plugin and `what` ("save", "load"), when the plugin cannot hand out its state.
std::vector<std::string> checkpoint_slots(const PluginInstance<strata_offload_ops>& offload,
                                          const char* what);

// The ranges this rank saves. Partitioned shards are saved as they are; when the shards are
// replicated (stage 0: every rank owns everything), rank r saves the r-th of `world` slices of
// each, so that every rank writes an equal part.
std::vector<SavedRange> saved_ranges(std::span<const strata_shard> shards, bool replicated,
                                     int rank, int world);

// Copies every saved range's slots into `out` (host memory) in the shard file's data order
// (range-major, slot-minor): the training pause of a save. `device`: where the shards' masters
// live (the job's device).
void copy_state_out(std::span<const strata_shard> shards, const std::vector<SavedRange>& ranges,
                    size_t slots, const PluginInstance<strata_offload_ops>& offload,
                    const strata_device& device, float* out);

// Writes `count` values (host memory) of slot `slot` (0 = master, in `device`'s memory) into
// shard `shard` from element `first`.
void write_shard_state(std::span<const strata_shard> shards, uint32_t shard, size_t slot,
                       uint64_t first, uint64_t count, const float* values,
                       const PluginInstance<strata_offload_ops>& offload,
                       const strata_device& device);

}  // namespace strata::rt
