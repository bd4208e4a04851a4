// One offload instance: the configured optimizer, its state for the shards it was given, and the
// step that runs where the parameters live (host memory), on the CPU kernels' thread pool.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <strata/plugin.hpp>
#include <vector>

#include "optimizer_config.hpp"
#include "thread_pool.hpp"

namespace strata::offload {

class Optimizer {
 public:
  Optimizer(const sdk::Host& host, const OptimizerConfig& config);

  OptimizerKind kind() const { return config_.kind; }
  // For the log: the kernels' instruction set and why, e.g. "avx2 (the widest this CPU has)".
  const std::string& isa_choice() const { return isa_choice_; }
  unsigned threads() const { return pool_.threads(); }

  // Allocates zeroed state (STRATA_MEM_OPTIMIZER_STATE) for exactly these shards, replacing any
  // earlier state.
  void init_state(std::span<const strata_shard> shards);

  // One optimizer step over the same shard list init_state saw.
  void step(std::span<const strata_shard> shards, const strata_step_args& args);

 private:
  // Where one shard's state lives inside state_, and what the shard looked like at init_state.
  struct ShardState {
    uint32_t param_index;
    uint64_t offset;
    uint64_t count;
    float* state;  // state_floats_per_element() * count floats
  };

  size_t state_floats_per_element() const;
  void check_same_shards(std::span<const strata_shard> shards) const;
  void step_sgd(std::span<const strata_shard> shards, double grad_scale, double lr_factor);
  void step_adam(std::span<const strata_shard> shards, uint64_t step, double grad_scale,
                 double lr_factor);
  void step_lion(std::span<const strata_shard> shards, double grad_scale, double lr_factor);

  sdk::Host host_;
  OptimizerConfig config_;
  std::string isa_choice_;  // chosen before the pool starts: a bad STRATA_CPU_ISA fails first
  ThreadPool pool_;
  sdk::HostArray<float> state_;
  std::vector<ShardState> shards_;
  bool initialized_ = false;
  // SGD momentum buffers start as a copy of the first gradient (torch semantics), so we need to
  // know whether this state has been stepped yet.
  bool stepped_ = false;
};

}  // namespace strata::offload
