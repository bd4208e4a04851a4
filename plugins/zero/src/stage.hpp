// One ZeRO stage's strategy. The plugin entry validates call order and arguments common to every
// stage, then delegates here; make_stage() picks the implementation from zero_optimization.stage.
#pragma once

#include "config.hpp"
#include "group_state.hpp"
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
  virtual void finish_reduce() = 0;
  // Not const: stages whose fp32 gradient storage is transient create it here if needed, so
  // that every shard has both pointers (the optimizer's init_state needs them).
  virtual const std::vector<strata_shard>& owned_shards() = 0;
  virtual void publish() = 0;
  virtual void zero_grad() = 0;

  // ABI 1.1. The defaults are the local bookkeeping of stages 0-1, where gathering moves nothing.
  virtual void gather(uint32_t group, uint32_t flags) { groups_.begin_gather(group, flags); }
  virtual void release(uint32_t group) { groups_.end_gather(group); }
  virtual void end_micro_step(bool boundary);
  // Fills view->data and view->grad for parameter `index` (valid).
  virtual void param_view(uint32_t index, void** data, void** grad) const = 0;

 protected:
  GroupState groups_;  // set by finalize
};

// Builds the stage `config.stage` asks for. Throws whatever the stage's constructor throws
// (e.g. no comm stratum, or one without the collectives the stage needs).
std::unique_ptr<Stage> make_stage(const ZeroConfig& config, const sdk::Host& host);

}  // namespace strata::zero
