// One ZeRO stage's step, as the plugin entry calls it. The entry (zero_plugin.cpp) validates call
// order and the arguments every stage shares, then calls these in the ABI's order. Stage 0
// implements all of them in stage0.cpp; stages 1-3 share what partitioning gives them alike in
// partitioned_stage.hpp (PartitionedStage; GradPartitionStage for 2-3), and each stage's file
// holds only what differs.
#pragma once

#include "config.hpp"
#include "param.hpp"

#include <strata/plugin.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace strata::zero {

class Stage {
 public:
  virtual ~Stage() = default;

  virtual int number() const = 0;
  // True if every rank owns the whole model (no partitioning): see strata_sharding_caps.
  virtual bool shards_replicated() const = 0;

  // Rejects a parameter this stage cannot handle (dtype, device, buffers), naming it. Called by
  // register_param so that the error points at the offending parameter immediately.
  virtual void check_param(const ParamRecord& param) const = 0;
  // All parameters and groups are known (dense indices, same on every rank). Collective.
  virtual void finalize(const std::vector<ParamRecord>& params,
                        const std::vector<GroupRecord>& groups) = 0;
  // `index` is valid; the caller checked it.
  virtual void grad_ready(uint32_t index, bool boundary) = 0;
  virtual void end_micro_step(bool boundary) = 0;
  virtual void finish_reduce() = 0;
  // Not const: stages whose fp32 gradient storage is transient create it here if needed, so
  // that every shard has both pointers (the optimizer's init_state needs them).
  virtual const std::vector<strata_shard>& owned_shards() = 0;
  // The same ranges for init_state (ABI 1.8): a stage whose masters are out of memory gives them
  // with NULL buffers, so that nothing is brought in; the others give owned_shards().
  virtual const std::vector<strata_shard>& shard_ranges() { return owned_shards(); }
  // The step has updated the masters and written the model copies the shards asked for.
  virtual void publish() = 0;
  virtual void zero_grad() = 0;

  // `flags` holds only known bits; `group` is unchecked (the stage's GroupState checks it).
  virtual void gather(uint32_t group, uint32_t flags) = 0;
  virtual void release(uint32_t group) = 0;
  // Fills *data and *grad for parameter `index` (valid).
  virtual void param_view(uint32_t index, void** data, void** grad) const = 0;
};

// Builds the stage `config.stage` asks for. Throws whatever the stage's constructor throws
// (e.g. no comm stratum, or one without the collectives the stage needs).
std::unique_ptr<Stage> make_stage(const ZeroConfig& config, const sdk::Host& host);

// Rejects what no stage handles: a dtype other than f32/f16/bf16, memory other than host or CUDA
// device memory, a parameter without data (unless `deferred_ok`: stage 3 checks at finalize that
// it partitions every such parameter). Names the parameter and the stage.
void check_host_param(const ParamRecord& param, int stage, bool deferred_ok = false);

}  // namespace strata::zero
