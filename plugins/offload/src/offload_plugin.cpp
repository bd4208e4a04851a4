// strata_offload: the entry point and the strata_offload_ops table. The optimizer step runs on the
// CPU kernels; its state lives beside the parameters (device none), in host memory that may be
// page-locked (cpu) or in files on an NVMe drive streamed through buffers (nvme).
#include <span>
#include <strata/plugin.hpp>

#include "optimizer.hpp"
#include "optimizer_config.hpp"
#include "param_store.hpp"

namespace strata::offload {
namespace {

// One offload instance: the optimizer and, once the sharding plugin opens it, the parameter
// store (ABI 1.8).
struct Instance {
  Instance(const sdk::Host& host, const OptimizerConfig& config)
      : optimizer(host, config), offload(config.offload) {}
  Optimizer optimizer;
  OffloadConfig offload;
  std::unique_ptr<ParamStore> params;
};

Instance& plugin(void* self) {
  if (self == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "self: NULL offload instance");
  return *static_cast<Instance*>(self);
}

Optimizer& instance(void* self) { return plugin(self).optimizer; }

std::span<const strata_shard> shard_list(const strata_shard* shards, size_t count) {
  sdk::require_array(shards, count, "shards");
  return {shards, count};
}

strata_status create(const strata_plugin_create_args* args, void** self, strata_error* err) {
  return sdk::guard(err, [&] {
    if (self == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "self: NULL output pointer");
    const auto [config_json, host] = sdk::read_create_args(args);
    const sdk::Host services(host);
    const OptimizerConfig config = parse_offload_config(config_json);
    auto* created = new Instance(services, config);
    *self = created;
    const Optimizer* opt = &created->optimizer;
    // With device none the step runs where the parameters are, which is known only at finalize
    // (init_state's line says where the state went); on the host it uses these CPU kernels.
    services.log(STRATA_LOG_INFO,
                 config.offload.device == OffloadDevice::none
                     ? "optimizer %s runs where the parameters are (offload_optimizer.device %s; "
                       "on the host: CPU kernels %s, %u threads (%s))"
                     : "optimizer %s runs on the host (offload_optimizer.device %s): CPU kernels "
                       "%s, %u threads (%s)",
                 optimizer_name(config.kind), device_name(config.offload.device),
                 opt->isa_choice().c_str(), opt->threads(), opt->threads_source().c_str());
  });
}

void destroy(void* self) { delete static_cast<Instance*>(self); }

strata_status query(void* self, strata_offload_caps* caps, strata_error* err) {
  return sdk::guard(err, [&] {
    const Optimizer& opt = instance(self);
    if (caps == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "caps: NULL");
    if (STRATA_STRUCT_HAS(caps, strata_offload_caps, device_type)) {
      caps->device_type = opt.step_device_type();
    }
    if (STRATA_STRUCT_HAS(caps, strata_offload_caps, optimizer)) {
      caps->optimizer = optimizer_name(opt.kind());
    }
    if (STRATA_STRUCT_HAS(caps, strata_offload_caps, writes_model_copy)) {
      caps->writes_model_copy = opt.writes_model_copy() ? 1 : 0;
    }
    if (STRATA_STRUCT_HAS(caps, strata_offload_caps, lr)) caps->lr = opt.configured_lr();
    if (STRATA_STRUCT_HAS(caps, strata_offload_caps, momentum)) {
      caps->momentum = opt.configured_momentum();
    }
  });
}

strata_status init_state(void* self, const strata_shard* shards, size_t count, strata_error* err) {
  return sdk::guard(err, [&] {
    Instance& in = plugin(self);
    Optimizer& opt = in.optimizer;
    opt.init_state(shard_list(shards, count));
    const sdk::Host host(opt.host());
    host.log(STRATA_LOG_INFO, "optimizer state: %s", opt.state_location().c_str());
    // The sharding plugin finalized before this: had it partitioned parameters, it would have
    // opened the store by now.
    if (in.offload.param_device != OffloadDevice::none && !in.params) {
      host.log(STRATA_LOG_WARN,
               "offload_param.device %s: the sharding plugin did not open the parameter store "
               "(strata_zero does at stage 3, ABI 1.8), so the parameters stay where it keeps them",
               device_name(in.offload.param_device));
    }
  });
}

strata_status step(void* self, const strata_shard* shards, size_t count,
                   const strata_step_args* args, strata_error* err) {
  return sdk::guard(err, [&] {
    if (args == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "args: NULL step arguments");
    instance(self).step(shard_list(shards, count), *args);
  });
}

// ABI 1.6: checkpoints. The state is per element only: the step count comes with every step's
// args, so there is no save_state/load_state.
strata_status state_slots(void* self, strata_state_slots* slots, strata_error* err) {
  return sdk::guard(err, [&] {
    const Optimizer& opt = instance(self);
    if (slots == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "slots: NULL");
    const std::span<const char* const> names = opt.slot_names();
    if (STRATA_STRUCT_HAS(slots, strata_state_slots, count)) {
      slots->count = static_cast<uint32_t>(names.size());
    }
    if (STRATA_STRUCT_HAS(slots, strata_state_slots, names)) {
      slots->names = names.empty() ? nullptr : names.data();
    }
  });
}

strata_status read_state(void* self, const strata_state_io_args* args, strata_error* err) {
  return sdk::guard(err, [&] { instance(self).read_state(args); });
}

strata_status write_state(void* self, const strata_state_io_args* args, strata_error* err) {
  return sdk::guard(err, [&] { instance(self).write_state(args); });
}

// ABI 1.8: the parameter store (offload_param), opened by the sharding plugin at its finalize.
strata_status param_store_open(void* self, strata_param_store_args* args, strata_error* err) {
  return sdk::guard(err, [&] {
    Instance& in = plugin(self);
    if (args == nullptr || !STRATA_STRUCT_HAS(args, strata_param_store_args, read_ahead_elements)) {
      sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "param_store_open: args NULL or older than ABI 1.8");
    }
    if (in.params) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "param_store_open: already open");
    args->location = -1;
    args->data = nullptr;
    args->read_ahead_elements = 0;
    if (in.offload.param_device == OffloadDevice::none) return;
    in.params = open_param_store(in.optimizer.host(), in.offload, args->bytes);
    args->location = in.params->location();
    args->data = in.params->data();
    if (in.offload.param_device == OffloadDevice::nvme) {
      args->read_ahead_elements = in.offload.param_buffer_count * in.offload.param_buffer_size;
    }
    sdk::Host(in.optimizer.host()).log(STRATA_LOG_INFO, "parameter partition (offload_param %s): %s",
                                       device_name(in.offload.param_device),
                                       in.params->describe().c_str());
  });
}

ParamStore& open_store(void* self) {
  Instance& in = plugin(self);
  if (!in.params) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "param store: not open");
  return *in.params;
}

strata_status param_store_start(void* self, const strata_param_io_args* args, uint64_t* ticket,
                                strata_error* err) {
  return sdk::guard(err, [&] {
    if (args == nullptr || ticket == nullptr ||
        !STRATA_STRUCT_HAS(args, strata_param_io_args, data)) {
      sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "param_store_start: args or ticket NULL");
    }
    *ticket = open_store(self).start(*args);
  });
}

strata_status param_store_wait(void* self, uint64_t ticket, strata_error* err) {
  return sdk::guard(err, [&] { open_store(self).wait(ticket); });
}

constexpr strata_offload_ops kOps = {
    .header = sdk::ops_header<strata_offload_ops>(),
    .create = create,
    .destroy = destroy,
    .query = query,
    .init_state = init_state,
    .step = step,
    .state_slots = state_slots,
    .read_state = read_state,
    .write_state = write_state,
    .save_state = nullptr,
    .load_state = nullptr,
    .param_store_open = param_store_open,
    .param_store_start = param_store_start,
    .param_store_wait = param_store_wait,
};

}  // namespace
}  // namespace strata::offload

STRATA_PLUGIN(strata::offload::kOps, "offload", "0.2.0",
              "optimizer executor (SGD, Adam, AdamW, Lion) on the CPU; state in memory or on NVMe")
