// strata_offload's entry point and C ops table: trampolines only. Each checks its pointers, calls
// the OffloadPlugin (offload_plugin.hpp) inside sdk::guard, and so turns an exception into a status
// and a message. The optimizer step runs on the CPU kernels; its state lives beside the parameters
// (device none), in host memory that may be page-locked (cpu) or in files on an NVMe drive (nvme).
#include <span>
#include <strata/plugin.hpp>

#include "offload_plugin.hpp"

namespace strata::offload {
namespace {

OffloadPlugin& instance(void* self) {
  if (self == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "self: NULL offload instance");
  return *static_cast<OffloadPlugin*>(self);
}

std::span<const strata_shard> shard_list(const strata_shard* shards, size_t count) {
  sdk::require_array(shards, count, "shards");
  return {shards, count};
}

strata_status create(const strata_plugin_create_args* args, void** self, strata_error* err) {
  return sdk::guard(err, [&] {
    if (self == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "self: NULL output pointer");
    const auto [config_json, host] = sdk::read_create_args(args);
    *self = new OffloadPlugin(config_json, host);
  });
}

void destroy(void* self) { delete static_cast<OffloadPlugin*>(self); }

strata_status query(void* self, strata_offload_caps* caps, strata_error* err) {
  return sdk::guard(err, [&] {
    const OffloadPlugin& offload = instance(self);
    if (caps == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "caps: NULL");
    offload.query(*caps);
  });
}

strata_status init_state(void* self, const strata_shard* shards, size_t count, strata_error* err) {
  return sdk::guard(err, [&] { instance(self).init_state(shard_list(shards, count)); });
}

strata_status step(void* self, const strata_shard* shards, size_t count,
                   const strata_step_args* args, strata_error* err) {
  return sdk::guard(err, [&] {
    if (args == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "args: NULL step arguments");
    instance(self).step(shard_list(shards, count), *args);
  });
}

strata_status state_slots(void* self, strata_state_slots* slots, strata_error* err) {
  return sdk::guard(err, [&] {
    const OffloadPlugin& offload = instance(self);
    if (slots == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "slots: NULL");
    offload.state_slots(*slots);
  });
}

strata_status read_state(void* self, const strata_state_io_args* args, strata_error* err) {
  return sdk::guard(err, [&] { instance(self).read_state(args); });
}

strata_status write_state(void* self, const strata_state_io_args* args, strata_error* err) {
  return sdk::guard(err, [&] { instance(self).write_state(args); });
}

strata_status param_store_open(void* self, strata_param_store_args* args, strata_error* err) {
  return sdk::guard(err, [&] {
    OffloadPlugin& offload = instance(self);
    if (args == nullptr || !STRATA_STRUCT_HAS(args, strata_param_store_args, read_ahead_elements)) {
      sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "param_store_open: args NULL or older than ABI 1.8");
    }
    offload.param_store_open(*args);
  });
}

strata_status param_store_start(void* self, const strata_param_io_args* args, uint64_t* ticket,
                                strata_error* err) {
  return sdk::guard(err, [&] {
    if (args == nullptr || ticket == nullptr ||
        !STRATA_STRUCT_HAS(args, strata_param_io_args, data)) {
      sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "param_store_start: args or ticket NULL");
    }
    *ticket = instance(self).param_store_start(*args);
  });
}

strata_status param_store_wait(void* self, uint64_t ticket, strata_error* err) {
  return sdk::guard(err, [&] { instance(self).param_store_wait(ticket); });
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
