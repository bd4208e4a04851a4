// DeepSpeed's elasticity (the manifest's "elasticity" block): the global batch and micro-batch a
// job keeps at every world size it may run at, computed exactly as DeepSpeed 0.14's
// deepspeed/elasticity/elasticity.py compute_elastic_config does (versions 0.1 and 0.2), so a job
// moved from DeepSpeed trains with the same batch arithmetic. tests/elastic checks it against
// DeepSpeed's own function on generated configs.
//
// Pure and without the runtime: strata-run links it to choose a restart's world size, libstrata
// to set micro-batch x accumulation at start-up. Thread-safe (no state).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::elastic {

// Every refusal of the batch arithmetic (here and in batch_rules.hpp): the message names the
// source, the key and what was expected.
class BatchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The block's keys with DeepSpeed's defaults (deepspeed/elasticity/constants.py).
struct ElasticityConfig {
  bool enabled = false;
  uint64_t max_train_batch_size = 2000;
  std::vector<uint64_t> micro_batch_sizes{2, 4, 6};
  uint64_t min_gpus = 1;
  uint64_t max_gpus = 10000;
  uint64_t num_gpus_per_node = 1;
  uint64_t model_parallel_size = 1;
  double min_time = 0;  // minutes; read and checked, used by schedulers, not here
  double version = 0.2;
  bool prefer_larger_batch = true;
  bool ignore_non_elastic_batch_info = false;
};

// Reads the "elasticity" object; `source` ("job.json") starts every message. With "enabled":
// true, max_train_batch_size and micro_batch_sizes are required (DeepSpeed's rule).
ElasticityConfig parse_elasticity(const nlohmann::json& block, const std::string& source);

struct ElasticChoice {
  uint64_t train_batch_size = 0;         // the global batch, the same at every valid size
  std::vector<uint64_t> valid_world_sizes;  // ascending (data-parallel sizes)
  uint64_t micro_batch_size = 0;         // at the world size asked for; 0 when none was
  uint64_t gradient_accumulation_steps = 0;
};

// DeepSpeed's compute_elastic_config(ds_config, version, world_size). world_size 0 asks for the
// valid sizes alone (version 0.2 needs a world size: refused without one). A world size outside
// the valid sizes is refused, naming them. Throws BatchError; `source` starts its message.
ElasticChoice compute_elastic_config(const ElasticityConfig& config, uint64_t world_size,
                                     const std::string& source);

}  // namespace strata::elastic
