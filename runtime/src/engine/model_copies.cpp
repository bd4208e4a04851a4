#include "engine/model_copies.hpp"

#include "engine/collectives.hpp"
#include "log.hpp"

namespace strata::rt {

void ModelCopies::configure(const PluginInstance<strata_precision_ops>* precision,
                            bool offload_writes, const char* offload_name) {
  precision_ = precision;
  offload_writes_ = offload_writes;
  offload_name_ = offload_name != nullptr ? offload_name : "?";
}

void ModelCopies::after_step(const strata_shard* shards, size_t count) {
  if (offload_writes_) return;
  cast(shards, count);
}

void ModelCopies::after_load(const strata_shard* shards, size_t count) { cast(shards, count); }

void ModelCopies::cast(const strata_shard* shards, size_t count) {
  if (precision_ == nullptr) return;
  for (size_t i = 0; i < count; ++i) {
    const strata_shard& s = shards[i];
    // Shards of a sharding plugin older than ABI 1.2 have no `model` field: no copy requested.
    if (!STRATA_STRUCT_HAS(&s, strata_shard, model_dtype) || s.model == nullptr || s.count == 0) {
      continue;
    }
    // Both in the job's device memory: a precision plugin of 1.7 casts on the device.
    strata_buffer master = host_buffer(s.master, s.count, STRATA_F32);
    strata_buffer model = host_buffer(s.model, s.count, s.model_dtype);
    master.device = model.device = device_;
    precision_->call("cast", &strata_precision_ops::cast, &master, &model);
    if (!logged_ && !offload_writes_) {
      logged_ = true;
      logger().info("model copies: offload plugin '{}' does not write them in its step; the "
                    "runtime casts the masters through precision plugin '{}'",
                    offload_name_, precision_->name());
    }
  }
}

}  // namespace strata::rt
