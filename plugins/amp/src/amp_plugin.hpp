// strata_amp's plugin class: one precision instance (fp32, fp16 with DeepSpeed's static or dynamic
// loss scaling, bf16), its kernels, loss scaler and timeline spans. entry.cpp holds the C
// trampolines that call it; every method may throw sdk::Error, which they turn into a status.
// Not thread-safe: the runtime calls an instance from one thread at a time.
#pragma once

#include <cstddef>
#include <span>
#include <strata/plugin.hpp>
#include <strata_common/cpu_isa.hpp>
#include <string>

#include "device_ops.hpp"
#include "loss_scaler.hpp"
#include "kernels.hpp"
#include "config.hpp"

namespace strata::amp {

class AmpPlugin {
 public:
  // Reads the config, chooses the kernels (STRATA_CPU_ISA) and threads, and logs the setup.
  AmpPlugin(const char* config_json, const strata_host_api* host);

  void query(strata_precision_caps& caps) const;
  double loss_scale() const;
  // Overflow flag and sum of squares of every shard's gradients (host or device shards).
  void grad_stats(std::span<const strata_shard> shards, strata_grad_stats& stats);
  // After a step: fp16 moves its loss scale (DeepSpeed's update_scale); fp32 and bf16 do nothing.
  void update(bool overflow);
  void cast(const strata_buffer& src, const strata_buffer& dst) const;
  // ABI 1.6: the loss scaler in the checkpoint (scaler_state.hpp has the text's shape).
  void save_state(char* buffer, std::size_t capacity, std::size_t* length) const;
  void load_state(const char* json);

 private:
  void log_setup() const;
  GradStats all_grad_stats(std::span<const strata_shard> shards);
  void update_fp16(bool overflow);

  sdk::Host host_;
  PrecisionConfig config_;
  common::cpu::IsaChoice isa_;  // the kernel set exec_ runs, and why
  std::string threads_source_;  // why exec_.threads is what it is, for the setup line
  Exec exec_;
  LossScaler scaler_;     // only consulted for fp16
  bool rank0_;            // logs that every rank would repeat come from rank 0 only
  sdk::Tracer tracer_;    // "grad_stats" and "cast" spans on the job's timeline
  DeviceScratch scratch_;  // grad_stats' device workspace, for shards in device memory
};

}  // namespace strata::amp
