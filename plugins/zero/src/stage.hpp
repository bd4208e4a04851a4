// One ZeRO stage's strategy. The plugin entry validates call order and arguments common to every
// stage, then delegates here; stages 1-3 are further implementations of this interface, chosen
// from zero_optimization.stage by make_stage().
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

  // Rejects a parameter this stage cannot handle (dtype, device), naming it. Called by
  // register_param so that the error points at the offending parameter immediately.
  virtual void check_param(const ParamRecord& param) const = 0;
  // All parameters are known (dense indices, same on every rank). Collective.
  virtual void finalize(const std::vector<ParamRecord>& params) = 0;
  // `index` is valid; the caller checked it.
  virtual void grad_ready(uint32_t index, bool boundary) = 0;
  virtual void finish_reduce() = 0;
  virtual const std::vector<strata_shard>& owned_shards() const = 0;
  virtual void publish() = 0;
  virtual void zero_grad() = 0;
};

// Builds the stage `config.stage` asks for. Throws STRATA_ERR_UNSUPPORTED for stages this build
// does not implement, and whatever the stage's constructor throws (e.g. no comm stratum).
std::unique_ptr<Stage> make_stage(const ZeroConfig& config, const sdk::Host& host);

}  // namespace strata::zero
