#include "offload_plugin.hpp"

namespace strata::offload {

OffloadPlugin::OffloadPlugin(const char* config_json, const strata_host_api* host)
    : optimizer_(sdk::Host(host), parse_offload_config(config_json)),
      offload_(optimizer_.config().offload) {
  const sdk::Host services(host);
  const OptimizerKind kind = optimizer_.kind();
  // With device none the step runs where the parameters are, which is known only at finalize
  // (init_state's line says where the state went); on the host it uses these CPU kernels.
  services.log(STRATA_LOG_INFO,
               offload_.device == OffloadDevice::none
                   ? "optimizer %s runs where the parameters are (offload_optimizer.device %s; "
                     "on the host: CPU kernels %s, %u threads (%s))"
                   : "optimizer %s runs on the host (offload_optimizer.device %s): CPU kernels "
                     "%s, %u threads (%s)",
               optimizer_name(kind), device_name(offload_.device),
               optimizer_.isa_choice().c_str(), optimizer_.threads(),
               optimizer_.threads_source().c_str());
}

void OffloadPlugin::query(strata_offload_caps& caps) const {
  const Optimizer& opt = optimizer_;
  if (STRATA_STRUCT_HAS(&caps, strata_offload_caps, device_type)) {
    caps.device_type = opt.step_device_type();
  }
  if (STRATA_STRUCT_HAS(&caps, strata_offload_caps, optimizer)) {
    caps.optimizer = optimizer_name(opt.kind());
  }
  if (STRATA_STRUCT_HAS(&caps, strata_offload_caps, writes_model_copy)) {
    caps.writes_model_copy = opt.writes_model_copy() ? 1 : 0;
  }
  if (STRATA_STRUCT_HAS(&caps, strata_offload_caps, lr)) caps.lr = opt.configured_lr();
  if (STRATA_STRUCT_HAS(&caps, strata_offload_caps, momentum)) {
    caps.momentum = opt.configured_momentum();
  }
}

void OffloadPlugin::init_state(std::span<const strata_shard> shards) {
  optimizer_.init_state(shards);
  const sdk::Host host(optimizer_.host());
  host.log(STRATA_LOG_INFO, "optimizer state: %s", optimizer_.state_location().c_str());
  // The sharding plugin finalized before this: had it partitioned parameters, it would have
  // opened the store by now.
  if (offload_.param_device != OffloadDevice::none && !params_) {
    host.log(STRATA_LOG_WARN,
             "offload_param.device %s: the sharding plugin did not open the parameter store "
             "(strata_zero does at stage 3, ABI 1.8), so the parameters stay where it keeps them",
             device_name(offload_.param_device));
  }
}

void OffloadPlugin::step(std::span<const strata_shard> shards, const strata_step_args& args) {
  optimizer_.step(shards, args);
}

void OffloadPlugin::state_slots(strata_state_slots& slots) const {
  const std::span<const char* const> names = optimizer_.slot_names();
  if (STRATA_STRUCT_HAS(&slots, strata_state_slots, count)) {
    slots.count = static_cast<uint32_t>(names.size());
  }
  if (STRATA_STRUCT_HAS(&slots, strata_state_slots, names)) {
    slots.names = names.empty() ? nullptr : names.data();
  }
}

void OffloadPlugin::read_state(const strata_state_io_args* args) { optimizer_.read_state(args); }

void OffloadPlugin::write_state(const strata_state_io_args* args) { optimizer_.write_state(args); }

void OffloadPlugin::param_store_open(strata_param_store_args& args) {
  if (params_) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "param_store_open: already open");
  args.location = -1;
  args.data = nullptr;
  args.read_ahead_elements = 0;
  if (offload_.param_device == OffloadDevice::none) return;
  params_ = open_param_store(optimizer_.host(), offload_, args.bytes);
  args.location = params_->location();
  args.data = params_->data();
  if (offload_.param_device == OffloadDevice::nvme) {
    args.read_ahead_elements = offload_.param_buffer_count * offload_.param_buffer_size;
  }
  sdk::Host(optimizer_.host())
      .log(STRATA_LOG_INFO, "parameter partition (offload_param %s): %s",
           device_name(offload_.param_device), params_->describe().c_str());
}

ParamStore& OffloadPlugin::open_store() {
  if (!params_) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "param store: not open");
  return *params_;
}

uint64_t OffloadPlugin::param_store_start(const strata_param_io_args& args) {
  return open_store().start(args);
}

void OffloadPlugin::param_store_wait(uint64_t ticket) { open_store().wait(ticket); }

}  // namespace strata::offload
