// One offload instance: the configured optimizer, its state for the shards it was given (in a
// StateStore: host memory, pinned host memory or a file on an NVMe drive), and the step, which
// runs on the CPU kernels' thread pool piece by piece as the store hands the state over.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <strata/cpu_threads.hpp>
#include <strata/plugin.hpp>
#include <vector>

#include "config.hpp"
#include "staged_step.hpp"
#include "state_store.hpp"
#include "thread_pool.hpp"

namespace strata::offload {

class Optimizer {
 public:
  Optimizer(const sdk::Host& host, const OptimizerConfig& config);

  OptimizerKind kind() const { return config_.kind; }
  const OptimizerConfig& config() const { return config_; }
  const sdk::Host& host() const { return host_; }
  // For the log: the kernels' instruction set, why, and the Highway target their own code reports
  // (the path really taken), e.g. "avx2 (the widest this CPU has, Highway AVX2)".
  std::string isa_choice() const;
  unsigned threads() const { return pool_.threads(); }
  // Why threads() is what it is (strata/cpu_threads.hpp's rule), for the create log line.
  const std::string& threads_source() const { return threads_.source; }
  bool writes_model_copy() const { return config_.offload.fused_copy_out; }
  // Where the state lives, for the log; empty before init_state.
  std::string state_location() const;
  // Where the step runs for shards on the job's device (ABI 1.7): the device itself with
  // offload_optimizer.device none, else the host.
  int32_t step_device_type() const;

  // Zeroed state (STRATA_MEM_OPTIMIZER_STATE) for exactly these shards, replacing any earlier
  // state: in memory, or in a file reserved now (so a full drive fails before training starts).
  void init_state(std::span<const strata_shard> shards);

  // One optimizer step over the same shard list init_state saw.
  void step(std::span<const strata_shard> shards, const strata_step_args& args);

  // ---- Checkpoints (ABI 1.6; optimizer_state.cpp) ----
  // The per-element state's slot names, PyTorch's/DeepSpeed's (Adam: exp_avg, exp_avg_sq; SGD
  // with momentum: momentum_buffer; Lion: exp_avg; plain SGD: none), in their order in the store.
  std::span<const char* const> slot_names() const;
  // The configured lr and momentum (Adam's and Lion's beta1, SGD's momentum; NaN for SGD without
  // momentum: it keeps no buffer a schedule could drive), for the caps.
  double configured_lr() const;
  double configured_momentum() const;
  // Copy a range of one slot of one shard out of / into the store (after init_state).
  void read_state(const strata_state_io_args* args);
  void write_state(const strata_state_io_args* args);

 private:
  // What a shard looked like at init_state.
  struct ShardShape {
    uint32_t param_index;
    uint64_t offset;
    uint64_t count;
  };

  // This step's scalars, resolved once from the args and the config.
  struct StepScalars {
    uint64_t step;
    double grad_scale;
    double lr;        // the step's lr (args.lr or the configured one) times lr_factor
    double momentum;  // args.momentum or the configured one (Adam/Lion beta1, SGD momentum)
    double beta2;     // Adam/Lion: args.beta2 or the configured one; SGD: unused
    bool buffer_live;  // SGD: the momentum buffer holds state (else it becomes the gradient)
  };

  // Where the shards given to init_state live and so where the step runs (ABI 1.7).
  enum class Placement {
    host,    // host shards: the CPU kernels, state in the store (as always)
    device,  // device shards, offload_optimizer.device none: fused CUDA kernels, state on device
    staged,  // device shards, offload_optimizer.device cpu: CPU kernels through pinned staging
  };
  Placement placement_for() const;
  void step_staged(std::span<const strata_shard> shards, const StepScalars& k);

  size_t state_floats_per_element() const;
  void check_same_shards(std::span<const strata_shard> shards) const;
  StepScalars resolve(const strata_step_args& args) const;
  void copy_state(StateStore::Direction direction, const strata_state_io_args* args);
  // One piece of the step: these slices of these shards, their state loaded.
  void step_piece(std::span<const strata_shard> shards, std::span<const StateSlice> slices,
                  const StepScalars& k);
  void step_sgd(std::span<const strata_shard> shards, std::span<const StateSlice> slices,
                const StepScalars& k);
  void step_adam(std::span<const strata_shard> shards, std::span<const StateSlice> slices,
                 const StepScalars& k);
  void step_lion(std::span<const strata_shard> shards, std::span<const StateSlice> slices,
                 const StepScalars& k);

  sdk::Host host_;
  sdk::Tracer tracer_;  // the step is an "optimizer" span on the timeline
  OptimizerConfig config_;
  // Chosen per instance before the pool starts, so a bad STRATA_CPU_ISA fails first.
  common::cpu::IsaChoice isa_;
  const OptimizerKernels* kernels_;  // isa_'s kernel set
  sdk::CpuThreads threads_;  // after isa_: the ISA error is reported first
  ThreadPool pool_;
  std::unique_ptr<StateStore> store_;
  Placement placement_ = Placement::host;
  std::unique_ptr<StagedPipeline> staged_;  // Placement::staged
  std::vector<float*> run_state_;           // Placement::staged: each staged run's state
  std::vector<ShardShape> shards_;
  uint64_t master_bytes_ = 0;  // fp32 master elements of shards_, times 4
  bool initialized_ = false;
  // SGD momentum buffers start as a copy of the first gradient (torch semantics), so we need to
  // know whether this state has been stepped yet.
  bool stepped_ = false;
  // write_state filled the state from a checkpoint: from a step after the first, the buffer is
  // live (a checkpoint taken before any step holds a buffer torch would not have had yet).
  bool state_written_ = false;
};

}  // namespace strata::offload
