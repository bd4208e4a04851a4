// Loading a checkpoint into this rank's shards at whatever layout the job has now (another world
// size, ZeRO stage or precision): every block of the checkpoint that overlaps a shard this rank
// owns is read once, its checksum checked, and the overlap copied into the master or, through the
// offload plugin's write_state, into the optimizer state. Local: no communication.
#pragma once

#include "checkpoint/format.hpp"
#include "engine/param_registry.hpp"
#include "loader/plugin_instance.hpp"

#include <strata/plugin_api.h>

#include <span>
#include <string>
#include <vector>

namespace strata::rt {

// Throws, naming metadata.json and the first differing parameter, when the checkpoint holds
// another model than the one registered (names and element counts, in registration order).
void check_same_model(const ckpt::Metadata& meta, const std::vector<ParamRecord>& params,
                      const std::string& metadata_path);

// For each of the job's slots, the checkpoint's slot of that name. Throws, naming both lists and
// the optimizer, when they differ.
std::vector<size_t> match_slots(const ckpt::Metadata& meta, const std::vector<std::string>& job_slots,
                                const std::string& metadata_path, const std::string& optimizer);

// Fills every element of every shard in every job slot from the checkpoint in `tag_dir`. Throws,
// naming the file, on a missing, truncated or damaged shard file and when the checkpoint does not
// cover a shard.
void load_shards(const std::string& tag_dir, const ckpt::Metadata& meta,
                 std::span<const strata_shard> shards, const std::vector<size_t>& slot_map,
                 const PluginInstance<strata_offload_ops>& offload, const strata_device& device);

}  // namespace strata::rt
