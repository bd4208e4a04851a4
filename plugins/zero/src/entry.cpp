// strata_zero's C entry point and sharding operation table. Each function only converts between
// the C ABI and ZeroPlugin; guard() keeps every exception on this side of the boundary.
#include "zero_plugin.hpp"

#include <strata/plugin.hpp>

#include <string>

namespace {

using strata::sdk::guard;
using strata::zero::ZeroPlugin;

// An args struct (ABI 1.3) the caller must pass, large enough to hold every field up to `last`.
template <class Args, class Field>
const Args& args_of(const Args* args, const char* call, Field Args::*last) {
  if (args == nullptr) {
    strata::sdk::fail(STRATA_ERR_INVALID_ARGUMENT, std::string(call) + ": args is NULL");
  }
  const auto* base = reinterpret_cast<const char*>(args);
  const size_t needed = static_cast<size_t>(reinterpret_cast<const char*>(&(args->*last)) - base) +
                        sizeof(Field);
  if (args->struct_size < needed) {
    strata::sdk::fail(STRATA_ERR_ABI, std::string(call) + ": args struct_size " +
                                          std::to_string(args->struct_size) + " is smaller than " +
                                          std::to_string(needed));
  }
  return *args;
}

ZeroPlugin& self_of(void* self) {
  if (self == nullptr) strata::sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "instance is NULL");
  return *static_cast<ZeroPlugin*>(self);
}

strata_status create(const strata_plugin_create_args* args, void** self, strata_error* err) {
  return guard(err, [&] {
    const strata::sdk::CreateArgs in = strata::sdk::read_create_args(args);
    if (self == nullptr) strata::sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "create: self is NULL");
    *self = new ZeroPlugin(in.config_json, in.host);
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

strata_status grad_ready(void* self, const strata_grad_ready_args* args, strata_error* err) {
  return guard(err, [&] {
    const auto& a = args_of(args, "grad_ready", &strata_grad_ready_args::boundary);
    self_of(self).grad_ready(a.param_index, a.boundary != 0);
  });
}

strata_status finish_reduce(void* self, strata_error* err) {
  return guard(err, [&] { self_of(self).finish_reduce(); });
}

strata_status shard_ranges(void* self, const strata_shard** shards, size_t* count,
                           strata_error* err) {
  return guard(err, [&] { self_of(self).shard_ranges(shards, count); });
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

strata_status gather(void* self, const strata_group_args* args, strata_error* err) {
  return guard(err, [&] {
    const auto& a = args_of(args, "gather", &strata_group_args::flags);
    self_of(self).gather(a.group, a.flags);
  });
}

strata_status release(void* self, const strata_group_args* args, strata_error* err) {
  return guard(err, [&] {
    const auto& a = args_of(args, "release", &strata_group_args::group);
    self_of(self).release(a.group);
  });
}

strata_status param_view(void* self, uint32_t index, strata_param_view* view, strata_error* err) {
  return guard(err, [&] { self_of(self).param_view(index, view); });
}

strata_status end_micro_step(void* self, const strata_micro_step_args* args, strata_error* err) {
  return guard(err, [&] {
    const auto& a = args_of(args, "end_micro_step", &strata_micro_step_args::boundary);
    self_of(self).end_micro_step(a.boundary != 0);
  });
}

constexpr strata_sharding_ops kOps = {
    .header = strata::sdk::ops_header<strata_sharding_ops>(),
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
    .shard_ranges = shard_ranges,
};

}  // namespace

// The floor is ABI 1.3, the table layout: the one later service zero uses (1.4 log_enabled, through
// sdk::Host::log) is called only where the runtime has it.
STRATA_PLUGIN(kOps, "zero", "0.3.0",
              "ZeRO sharding, stages 0-3 (partitioned optimizer state, gradients, parameters)")
