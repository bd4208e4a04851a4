// Offload plugin for the compatibility tests: plain SGD, p -= lr * lr_factor * grad_scale * g, no
// state (as examples/plugin_template/sgd_plugin.cpp). Config: the manifest's DeepSpeed block,
// {"optimizer": {"params": {"lr": <positive number>}}}. Built against the 1.0, 1.2 and today's
// header from this one source; the step reads the shard array in its header's stride, so a wrong
// stride on the runtime's side shows up as wrong parameters.
#include "compat_plugin.hpp"

#include <nlohmann/json.hpp>

#include <memory>

namespace {

struct Sgd {
  const strata_host_api* host = nullptr;
  double lr = 0.0;
};

strata_status create_impl(const char* config_json, const strata_host_api* host, void** self,
                          strata_error* err) {
  return compat::guard(err, [&] {
    const auto config = nlohmann::json::parse(config_json);
    const auto lr = config.value(nlohmann::json::json_pointer("/optimizer/params/lr"), nlohmann::json());
    if (!lr.is_number() || lr.get<double>() <= 0.0) {
      compat::fail(STRATA_ERR_INVALID_ARGUMENT, "optimizer.params.lr: expected a positive number, got " + lr.dump());
    }
    auto sgd = std::make_unique<Sgd>();
    sgd->host = host;
    sgd->lr = lr.get<double>();
    compat::log(host, STRATA_LOG_INFO, "compat_sgd: built with ABI %s, host ABI %u.%u, lr %g",
                compat::built_with(), host != nullptr ? host->abi_major : 0u,
                host != nullptr ? COMPAT_RUNTIME_MINOR(host) : 0u, sgd->lr);
    *self = sgd.release();
  });
}
COMPAT_CREATE(create_impl)

void destroy(void* self) { delete static_cast<Sgd*>(self); }

strata_status query(void*, strata_offload_caps* caps, strata_error* err) {
  return compat::guard(err, [&] {
    if (STRATA_STRUCT_HAS(caps, strata_offload_caps, device_type)) caps->device_type = STRATA_DEVICE_HOST;
    if (STRATA_STRUCT_HAS(caps, strata_offload_caps, optimizer)) caps->optimizer = "sgd";
  });
}

strata_status init_state(void*, const strata_shard* shards, size_t count, strata_error* err) {
  return compat::guard(err, [&] {
    for (size_t s = 0; s < count; ++s) {
      if (shards[s].struct_size < sizeof(strata_shard) && shards[s].struct_size != 0) {
        // Readers use what lies inside struct_size; our shard is whole when the stride is ours.
        compat::fail(STRATA_ERR_ABI, "init_state: shard struct_size " + std::to_string(shards[s].struct_size) +
                                         " is smaller than this build's " + std::to_string(sizeof(strata_shard)));
      }
    }
  });
}

strata_status step(void* self, const strata_shard* shards, size_t count, const strata_step_args* args,
                   strata_error* err) {
  return compat::guard(err, [&] {
    const auto* sgd = static_cast<const Sgd*>(self);
    const double factor = sgd->lr * args->lr_factor * args->grad_scale;
    for (size_t s = 0; s < count; ++s) {
      for (uint64_t i = 0; i < shards[s].count; ++i) {
        shards[s].master[i] -= static_cast<float>(factor * shards[s].grad[i]);
      }
    }
  });
}

const strata_offload_ops kOps = {COMPAT_OPS_HEADER(strata_offload_ops, STRATA_PLUGIN_OFFLOAD) create,
                                 destroy, query, init_state, step COMPAT_OFFLOAD_CHECKPOINTS};

}  // namespace

COMPAT_ENTRY(kOps, STRATA_PLUGIN_OFFLOAD, "compat-sgd", "plain SGD, built against one ABI header")
