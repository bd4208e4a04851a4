#include "checkpoint/checkpoint_loader.hpp"

#include "checkpoint/checkpoint_state.hpp"
#include "error.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>

namespace strata::rt {

void check_same_model(const ckpt::Metadata& meta, const std::vector<ParamRecord>& params,
                      const std::string& metadata_path) {
  const size_t common = std::min(meta.params.size(), params.size());
  for (size_t i = 0; i < common; ++i) {
    const ckpt::ParamInfo& saved = meta.params[i];
    const ParamRecord& mine = params[i];
    if (saved.name != mine.name || saved.count != mine.count) {
      throw Error(STRATA_ERR_MISMATCH,
                  metadata_path + ": the checkpoint is of another model: parameter " +
                      std::to_string(i) + " is '" + saved.name + "' with " +
                      std::to_string(saved.count) + " elements there, '" + mine.name + "' with " +
                      std::to_string(mine.count) + " in this job");
    }
  }
  if (meta.params.size() != params.size()) {
    const bool more_saved = meta.params.size() > params.size();
    const std::string first = more_saved ? meta.params[common].name : params[common].name;
    throw Error(STRATA_ERR_MISMATCH,
                metadata_path + ": the checkpoint is of another model: it has " +
                    std::to_string(meta.params.size()) + " parameters, this job registered " +
                    std::to_string(params.size()) + "; the first " +
                    (more_saved ? "missing from this job" : "missing from the checkpoint") +
                    " is '" + first + "'");
  }
}

std::vector<size_t> match_slots(const ckpt::Metadata& meta, const std::vector<std::string>& job_slots,
                                const std::string& metadata_path, const std::string& optimizer) {
  auto list = [](const std::vector<std::string>& names) {
    std::string out;
    for (size_t i = 1; i < names.size(); ++i) out += (out.empty() ? "" : ", ") + names[i];
    return "[" + out + "]";
  };
  std::vector<size_t> map;
  for (const std::string& slot : job_slots) {
    const auto it = std::find(meta.slots.begin(), meta.slots.end(), slot);
    if (it == meta.slots.end() || meta.slots.size() != job_slots.size()) {
      throw Error(STRATA_ERR_MISMATCH,
                  metadata_path + ": the checkpoint's optimizer state is " + list(meta.slots) +
                      ", this job's optimizer (" + optimizer + ") keeps " + list(job_slots) +
                      ": load it with the optimizer it was saved with");
    }
    map.push_back(static_cast<size_t>(it - meta.slots.begin()));
  }
  return map;
}

void load_shards(const std::string& tag_dir, const ckpt::Metadata& meta,
                 std::span<const strata_shard> shards, const std::vector<size_t>& slot_map,
                 const PluginInstance<strata_offload_ops>& offload, const strata_device& device) {
  // Shards by parameter, and how many of each shard's elements the checkpoint has filled.
  std::multimap<uint32_t, uint32_t> by_param;
  for (uint32_t i = 0; i < shards.size(); ++i) by_param.emplace(shards[i].param_index, i);
  std::vector<uint64_t> filled(shards.size(), 0);
  std::vector<float> block;
  for (size_t rank = 0; rank < meta.ranks.size(); ++rank) {
    const ckpt::RankInfo& info = meta.ranks[rank];
    std::unique_ptr<ckpt::ShardReader> reader;  // opened at the first block this rank needs
    for (uint32_t r = 0; r < info.ranges.size(); ++r) {
      const ckpt::Range& saved = info.ranges[r];
      // The shards this saved range overlaps, and where: [lo, hi) in parameter elements.
      struct Overlap {
        uint32_t shard;
        uint64_t lo, hi;
      };
      std::vector<Overlap> overlaps;
      const auto [begin, end] = by_param.equal_range(saved.param);
      for (auto it = begin; it != end; ++it) {
        const strata_shard& s = shards[it->second];
        const uint64_t lo = std::max(s.offset, saved.offset);
        const uint64_t hi = std::min(s.offset + s.count, saved.offset + saved.count);
        if (lo < hi) overlaps.push_back({it->second, lo, hi});
      }
      if (overlaps.empty()) continue;
      if (!reader) {
        const std::string path = (std::filesystem::path(tag_dir) / info.file).string();
        reader = std::make_unique<ckpt::ShardReader>(path, meta, static_cast<int>(rank));
      }
      block.resize(saved.count);
      for (size_t slot = 0; slot < slot_map.size(); ++slot) {
        reader->read_block(r, static_cast<uint32_t>(slot_map[slot]), block.data());
        for (const Overlap& o : overlaps) {
          const uint64_t first = o.lo - shards[o.shard].offset;
          write_shard_state(shards, o.shard, slot, first, o.hi - o.lo,
                            block.data() + (o.lo - saved.offset), offload, device);
        }
      }
      for (const Overlap& o : overlaps) filled[o.shard] += o.hi - o.lo;
    }
  }
  for (uint32_t i = 0; i < shards.size(); ++i) {
    if (filled[i] != shards[i].count) {
      const strata_shard& s = shards[i];
      throw Error(STRATA_ERR_INVALID_ARGUMENT,
                  tag_dir + "/" + ckpt::kMetadataFile + ": the checkpoint's ranges cover " +
                      std::to_string(filled[i]) + " of the " + std::to_string(s.count) +
                      " elements [" + std::to_string(s.offset) + ", " +
                      std::to_string(s.offset + s.count) + ") of parameter " +
                      meta.params[s.param_index].name + " this rank owns");
    }
  }
}

}  // namespace strata::rt
