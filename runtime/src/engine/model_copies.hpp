// Model-dtype copies of the fp32 masters (plugin_api.h, "Model-dtype copies"): the one place the
// runtime makes them. The rule: a shard's `model` pointer is the sharding plugin's request for a
// copy (the sharding plugin never rounds masters itself); the offload plugin writes the copies in
// its step when its caps say writes_model_copy; otherwise the runtime casts them through the
// precision stratum here, after the offload step and before publish.
#pragma once

#include "loader/plugin_instance.hpp"

#include <strata/plugin_api.h>

#include <cstddef>

namespace strata::rt {

class ModelCopies {
 public:
  // After the strata are created: who casts (precision) and whether the offload plugin writes the
  // copies itself (its caps' writes_model_copy; `offload_name` for the log).
  void configure(const PluginInstance<strata_precision_ops>* precision, bool offload_writes,
                 const char* offload_name);
  // At finalize: where the shards' masters and copies live (the job's device), which the cast's
  // buffers say.
  void set_device(const strata_device& device) { device_ = device; }

  // After the offload step, before publish: casts every shard whose `model` is non-NULL, unless the
  // offload plugin wrote the copies. Throws what precision.cast reports.
  void after_step(const strata_shard* shards, size_t count);
  // After a checkpoint wrote the masters: casts every shard whose `model` is non-NULL, whoever
  // casts after a step (the offload plugin writes copies only in its own step).
  void after_load(const strata_shard* shards, size_t count);

 private:
  void cast(const strata_shard* shards, size_t count);

  const PluginInstance<strata_precision_ops>* precision_ = nullptr;
  bool offload_writes_ = false;
  const char* offload_name_ = "?";
  bool logged_ = false;  // the first cast is logged once
  strata_device device_{STRATA_DEVICE_HOST, 0};
};

}  // namespace strata::rt
