// strata_amp: the entry point and the strata_precision_ops table. fp32 only in this build: the
// loss scale is 1, update is a no-op, grad_stats and cast do the real work.
#include <span>
#include <strata/plugin.hpp>
#include <string>

#include "cast.hpp"
#include "grad_stats.hpp"
#include "precision_config.hpp"

namespace strata::amp {
namespace {

// One precision instance. Holds no mutable state yet (fp32 has no loss scale to track).
struct Instance {
  sdk::Host host;
  PrecisionConfig config;
};

Instance& instance(void* self) {
  if (self == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "self: NULL precision instance");
  return *static_cast<Instance*>(self);
}

strata_status create(const char* config_json, const strata_host_api* host, void** self,
                     strata_error* err) {
  return sdk::guard(err, [&] {
    if (self == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "self: NULL output pointer");
    if (config_json == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "config: NULL JSON text");
    const sdk::Host services(host);
    *self = new Instance{services, parse_precision_config(config_json)};
    services.log(STRATA_LOG_DEBUG, "precision fp32 (no loss scaling)");
  });
}

void destroy(void* self) { delete static_cast<Instance*>(self); }

strata_status query(void* self, strata_precision_caps* caps, strata_error* err) {
  return sdk::guard(err, [&] {
    const Instance& amp = instance(self);
    if (caps == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "caps: NULL");
    if (STRATA_STRUCT_HAS(caps, strata_precision_caps, model_dtype)) {
      caps->model_dtype = amp.config.model_dtype;
    }
    if (STRATA_STRUCT_HAS(caps, strata_precision_caps, dynamic_scaling)) {
      caps->dynamic_scaling = 0;
    }
  });
}

strata_status loss_scale(void* self, double* scale, strata_error* err) {
  return sdk::guard(err, [&] {
    instance(self);
    if (scale == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "scale: NULL");
    *scale = 1.0;
  });
}

strata_status grad_stats(void* self, const strata_shard* shards, size_t count,
                         strata_grad_stats* stats, strata_error* err) {
  return sdk::guard(err, [&] {
    instance(self);
    if (stats == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "stats: NULL");
    sdk::require_array(shards, count, "shards");
    const GradStats result = amp::grad_stats(std::span<const strata_shard>(shards, count));
    if (STRATA_STRUCT_HAS(stats, strata_grad_stats, nonfinite)) {
      stats->nonfinite = result.nonfinite ? 1 : 0;
    }
    if (STRATA_STRUCT_HAS(stats, strata_grad_stats, sum_sq)) stats->sum_sq = result.sum_sq;
  });
}

strata_status update(void* self, int32_t /*overflow*/, strata_error* err) {
  return sdk::guard(err, [&] { instance(self); });  // fp32: no scale to adjust
}

strata_status cast(void* self, const strata_buffer* src, const strata_buffer* dst,
                   strata_error* err) {
  return sdk::guard(err, [&] {
    instance(self);
    if (src == nullptr || dst == nullptr) {
      sdk::fail(STRATA_ERR_INVALID_ARGUMENT, src == nullptr ? "src: NULL" : "dst: NULL");
    }
    amp::cast(*src, *dst);
  });
}

const strata_precision_ops kOps = {
    sizeof(strata_precision_ops), create, destroy, query, loss_scale, grad_stats, update, cast,
};

const strata_plugin_descriptor kDescriptor = {
    sizeof(strata_plugin_descriptor),
    STRATA_ABI_MAJOR,
    STRATA_ABI_MINOR,
    STRATA_PLUGIN_PRECISION,
    "amp",
    "0.1.0",
    "number format and loss scaling (fp32 in this build)",
    &kOps,
};

}  // namespace
}  // namespace strata::amp

STRATA_PLUGIN_EXPORT const strata_plugin_descriptor* strata_plugin_entry_v1(void) {
  return &strata::amp::kDescriptor;
}
