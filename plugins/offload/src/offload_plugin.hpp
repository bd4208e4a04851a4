// strata_offload's plugin class: one offload instance, its optimizer (optimizer.hpp: the step on
// the CPU kernels or the device, the state's placement) and, once the sharding plugin opens it at
// ZeRO stage 3, the parameter store (ABI 1.8). entry.cpp holds the C trampolines that call it;
// every method may throw sdk::Error, which they turn into a status.
// Not thread-safe: the runtime calls an instance from one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <strata/plugin.hpp>

#include "optimizer.hpp"
#include "config.hpp"
#include "param_store.hpp"

namespace strata::offload {

class OffloadPlugin {
 public:
  // Reads the config, chooses the kernels and threads, and logs where the step runs.
  OffloadPlugin(const char* config_json, const strata_host_api* host);

  void query(strata_offload_caps& caps) const;
  void init_state(std::span<const strata_shard> shards);
  void step(std::span<const strata_shard> shards, const strata_step_args& args);
  // ABI 1.6: checkpoints. The state is per element only: the step count comes with every step's
  // args, so there is no save_state/load_state.
  void state_slots(strata_state_slots& slots) const;
  void read_state(const strata_state_io_args* args);
  void write_state(const strata_state_io_args* args);
  // ABI 1.8: the parameter store (offload_param), opened by the sharding plugin at its finalize.
  void param_store_open(strata_param_store_args& args);
  uint64_t param_store_start(const strata_param_io_args& args);
  void param_store_wait(uint64_t ticket);

 private:
  ParamStore& open_store();

  Optimizer optimizer_;
  OffloadConfig offload_;
  std::unique_ptr<ParamStore> params_;
};

}  // namespace strata::offload
