// strata_amp's entry point and C ops table: trampolines only. Each checks its pointers, calls the
// AmpPlugin (amp_plugin.hpp) inside sdk::guard, and so turns an exception into a status and a
// message. fp32, fp16 (DeepSpeed's static or dynamic loss scaling) and bf16 (no scaling).
#include <span>
#include <strata/plugin.hpp>

#include "amp_plugin.hpp"

namespace strata::amp {
namespace {

AmpPlugin& instance(void* self) {
  if (self == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "self: NULL precision instance");
  return *static_cast<AmpPlugin*>(self);
}

strata_status create(const strata_plugin_create_args* args, void** self, strata_error* err) {
  return sdk::guard(err, [&] {
    if (self == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "self: NULL output pointer");
    const auto [config_json, host] = sdk::read_create_args(args);
    *self = new AmpPlugin(config_json, host);
  });
}

void destroy(void* self) { delete static_cast<AmpPlugin*>(self); }

strata_status query(void* self, strata_precision_caps* caps, strata_error* err) {
  return sdk::guard(err, [&] {
    const AmpPlugin& amp = instance(self);
    if (caps == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "caps: NULL");
    amp.query(*caps);
  });
}

strata_status loss_scale(void* self, double* scale, strata_error* err) {
  return sdk::guard(err, [&] {
    const AmpPlugin& amp = instance(self);
    if (scale == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "scale: NULL");
    *scale = amp.loss_scale();
  });
}

strata_status grad_stats(void* self, const strata_shard* shards, size_t count,
                         strata_grad_stats* stats, strata_error* err) {
  return sdk::guard(err, [&] {
    AmpPlugin& amp = instance(self);
    if (stats == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "stats: NULL");
    sdk::require_array(shards, count, "shards");
    amp.grad_stats(std::span<const strata_shard>(shards, count), *stats);
  });
}

strata_status update(void* self, int32_t overflow, strata_error* err) {
  return sdk::guard(err, [&] { instance(self).update(overflow != 0); });
}

strata_status cast(void* self, const strata_buffer* src, const strata_buffer* dst,
                   strata_error* err) {
  return sdk::guard(err, [&] {
    const AmpPlugin& amp = instance(self);
    if (src == nullptr || dst == nullptr) {
      sdk::fail(STRATA_ERR_INVALID_ARGUMENT, src == nullptr ? "src: NULL" : "dst: NULL");
    }
    amp.cast(*src, *dst);
  });
}

strata_status save_state(void* self, char* buffer, size_t capacity, size_t* length,
                         strata_error* err) {
  return sdk::guard(err, [&] { instance(self).save_state(buffer, capacity, length); });
}

strata_status load_state(void* self, const char* json, strata_error* err) {
  return sdk::guard(err, [&] {
    AmpPlugin& amp = instance(self);
    if (json == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "load_state: json is NULL");
    amp.load_state(json);
  });
}

constexpr strata_precision_ops kOps = {
    .header = sdk::ops_header<strata_precision_ops>(),
    .create = create,
    .destroy = destroy,
    .query = query,
    .loss_scale = loss_scale,
    .grad_stats = grad_stats,
    .update = update,
    .cast = cast,
    .save_state = save_state,
    .load_state = load_state,
};

}  // namespace
}  // namespace strata::amp

STRATA_PLUGIN(strata::amp::kOps, "amp", "0.3.0",
              "number format and loss scaling: fp32, fp16 (DeepSpeed loss scaling), bf16")
