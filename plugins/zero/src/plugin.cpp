// strata_zero's C entry point and sharding operation table. Each function only converts between
// the C ABI and ZeroPlugin; guard() keeps every exception on this side of the boundary.
#include "zero_plugin.hpp"

#include <strata/plugin.hpp>

namespace {

using strata::sdk::guard;
using strata::zero::ZeroPlugin;

ZeroPlugin& self_of(void* self) {
  if (self == nullptr) strata::sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "instance is NULL");
  return *static_cast<ZeroPlugin*>(self);
}

strata_status create(const char* config_json, const strata_host_api* host, void** self,
                     strata_error* err) {
  return guard(err, [&] {
    if (self == nullptr) strata::sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "create: self is NULL");
    *self = new ZeroPlugin(config_json, host);
  });
}

void destroy(void* self) { delete static_cast<ZeroPlugin*>(self); }

strata_status query(void* self, strata_sharding_caps* caps, strata_error* err) {
  return guard(err, [&] { self_of(self).query(caps); });
}

strata_status register_param(void* self, uint32_t index, const strata_param_desc* param,
                             strata_error* err) {
  return guard(err, [&] { self_of(self).register_param(index, param); });
}

strata_status finalize(void* self, strata_error* err) {
  return guard(err, [&] { self_of(self).finalize(); });
}

strata_status grad_ready(void* self, uint32_t index, int32_t boundary, strata_error* err) {
  return guard(err, [&] { self_of(self).grad_ready(index, boundary != 0); });
}

strata_status finish_reduce(void* self, strata_error* err) {
  return guard(err, [&] { self_of(self).finish_reduce(); });
}

strata_status owned_shards(void* self, const strata_shard** shards, size_t* count,
                           strata_error* err) {
  return guard(err, [&] { self_of(self).owned_shards(shards, count); });
}

strata_status publish(void* self, strata_error* err) {
  return guard(err, [&] { self_of(self).publish(); });
}

strata_status zero_grad(void* self, strata_error* err) {
  return guard(err, [&] { self_of(self).zero_grad(); });
}

strata_status define_group(void* self, uint32_t group, const char* name, const uint32_t* params,
                           size_t count, strata_error* err) {
  return guard(err, [&] { self_of(self).define_group(group, name, params, count); });
}

strata_status gather(void* self, uint32_t group, uint32_t flags, strata_error* err) {
  return guard(err, [&] { self_of(self).gather(group, flags); });
}

strata_status release(void* self, uint32_t group, strata_error* err) {
  return guard(err, [&] { self_of(self).release(group); });
}

strata_status param_view(void* self, uint32_t index, strata_param_view* view, strata_error* err) {
  return guard(err, [&] { self_of(self).param_view(index, view); });
}

strata_status end_micro_step(void* self, int32_t boundary, strata_error* err) {
  return guard(err, [&] { self_of(self).end_micro_step(boundary != 0); });
}

const strata_sharding_ops kOps = {
    .struct_size = sizeof(strata_sharding_ops),
    .create = create,
    .destroy = destroy,
    .query = query,
    .register_param = register_param,
    .finalize = finalize,
    .grad_ready = grad_ready,
    .finish_reduce = finish_reduce,
    .owned_shards = owned_shards,
    .publish = publish,
    .zero_grad = zero_grad,
    .define_group = define_group,
    .gather = gather,
    .release = release,
    .param_view = param_view,
    .end_micro_step = end_micro_step,
};

const strata_plugin_descriptor kDescriptor = {
    sizeof(strata_plugin_descriptor),
    STRATA_ABI_MAJOR,
    STRATA_ABI_MINOR,
    STRATA_PLUGIN_SHARDING,
    "zero",
    "0.2.0",
    "ZeRO sharding, stages 0-3 (partitioned optimizer state, gradients, parameters)",
    &kOps,
};

}  // namespace

STRATA_PLUGIN_EXPORT const strata_plugin_descriptor* strata_plugin_entry_v1(void) {
  return &kDescriptor;
}
