// The global batch at a world size: DeepSpeed's arithmetic (train = micro x accumulation x world),
// DeepSpeed's elasticity block, and the rule for a job restarted at another world size. One
// reading for libstrata (which sets the batch at start-up) and strata-run (which chooses a
// restart's size among those the rules allow). Pure; thread-safe.
#pragma once

#include "elastic/elasticity.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::elastic {

// The three DeepSpeed keys as written (absent: nullopt).
struct BatchKeys {
  std::optional<uint64_t> train_batch_size;
  std::optional<uint64_t> train_micro_batch_size_per_gpu;
  std::optional<uint64_t> gradient_accumulation_steps;
};

struct Batch {
  uint64_t train_batch_size = 0;
  uint64_t micro_batch_size = 0;
  uint64_t gradient_accumulation_steps = 0;
};

// deepspeed/runtime/config.py's rule: any two keys determine the third by integer division, and
// the relation is then checked exactly. Throws BatchError naming `source` and the values.
Batch deepspeed_batch(const BatchKeys& keys, uint64_t world_size, const std::string& source);

// What a manifest says about batches: its keys and, when enabled, its elasticity block.
struct BatchPlan {
  BatchKeys keys;
  std::optional<ElasticityConfig> elasticity;  // only when "enabled": true
};

// Reads the keys and the "elasticity" block of a manifest document (an object). Throws
// BatchError for a malformed block, or for batch keys beside an enabled block without
// "ignore_non_elastic_batch_info": true (DeepSpeed's refusal: the block sets them).
BatchPlan read_batch_plan(const nlohmann::json& manifest, const std::string& source);

// The batch at `world_size`:
// - with an enabled elasticity block: DeepSpeed's compute_elastic_config for that size;
// - else, when the job first ran at another size (`first_world_size`, 0: this is the first run):
//   the first run's global batch and micro-batch, the accumulation changed so that
//   micro x accumulation x world is that global batch again; a size where no whole accumulation
//   does is refused, naming the sizes that work up to twice the first;
// - else DeepSpeed's rule.
// Throws BatchError naming `source`.
Batch batch_at(const BatchPlan& plan, uint64_t first_world_size, uint64_t world_size,
               const std::string& source);

}  // namespace strata::elastic
