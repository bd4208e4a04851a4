#include "synthetic.hpp"

#include <algorithm>

namespace strata::ckpt::test {

Metadata synthetic_metadata(const SyntheticSpec& spec) {
  Metadata meta;
  meta.world_size = spec.ranks;
  meta.slots = spec.slots;
  uint64_t total = 0;
  for (size_t p = 0; p < spec.param_counts.size(); ++p) {
    meta.params.push_back({"layer" + std::to_string(p) + ".weight", spec.param_counts[p], p % 2 ? "bf16" : "f32"});
    total += spec.param_counts[p];
  }
  // Rank r holds flat elements [r * total / ranks, (r + 1) * total / ranks).
  for (int r = 0; r < spec.ranks; ++r) {
    const uint64_t begin = total * static_cast<uint64_t>(r) / static_cast<uint64_t>(spec.ranks);
    const uint64_t end = total * static_cast<uint64_t>(r + 1) / static_cast<uint64_t>(spec.ranks);
    RankInfo info;
    info.file = shard_file_name(r);
    uint64_t param_begin = 0;
    for (size_t p = 0; p < spec.param_counts.size(); ++p) {
      const uint64_t param_end = param_begin + spec.param_counts[p];
      const uint64_t lo = std::max(begin, param_begin), hi = std::min(end, param_end);
      if (lo < hi) info.ranges.push_back({static_cast<uint32_t>(p), lo - param_begin, hi - lo});
      param_begin = param_end;
    }
    info.data_bytes = data_bytes(info.ranges, spec.slots.size());
    meta.ranks.push_back(std::move(info));
  }
  meta.document = {{"strata_version", "0.1.0"},
                   {"stage", 2},
                   {"model_dtype", "bf16"},
                   {"optimizer", {{"type", "AdamW"}, {"lr", 0.001}}},
                   {"counters", {{"global_steps", 12}, {"micro_steps", 48}, {"skipped_steps", 1}}},
                   {"extra", {{"note", "synthetic"}}}};
  return meta;
}

Metadata write_synthetic(const std::string& tag_dir, const SyntheticSpec& spec) {
  Metadata meta = synthetic_metadata(spec);
  std::vector<float> block;
  for (int r = 0; r < spec.ranks; ++r) {
    ShardWriter writer(tag_dir + "/" + meta.ranks[static_cast<size_t>(r)].file, r);
    const std::vector<Range>& ranges = meta.ranks[static_cast<size_t>(r)].ranges;
    for (uint32_t i = 0; i < ranges.size(); ++i) {
      for (uint32_t s = 0; s < spec.slots.size(); ++s) {
        block.resize(ranges[i].count);
        for (uint64_t e = 0; e < ranges[i].count; ++e) block[e] = synthetic_value(ranges[i].param, s, ranges[i].offset + e);
        writer.write_block(i, s, block.data(), block.size());
      }
    }
    writer.finish();
  }
  write_file_atomically(tag_dir + "/" + kMetadataFile, metadata_text(meta));
  return meta;
}

}  // namespace strata::ckpt::test
