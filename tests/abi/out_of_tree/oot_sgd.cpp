// A third-party offload plugin: plain SGD, p -= lr * lr_factor * grad_scale * g, with no state.
// Config: {"optimizer": {"params": {"lr": <positive number>}}} (the manifest's DeepSpeed block).
#include <strata/plugin.hpp>

#include <nlohmann/json.hpp>

#include <memory>

namespace {

using strata::sdk::fail;
using strata::sdk::guard;

struct Sgd {
  strata::sdk::Host host;
  double lr = 0.0;
};

strata_status create(const strata_plugin_create_args* args, void** self, strata_error* err) {
  return guard(err, [&] {
    const strata::sdk::CreateArgs in = strata::sdk::read_create_args(args);
    const auto config = nlohmann::json::parse(in.config_json);
    const auto lr = config.value(nlohmann::json::json_pointer("/optimizer/params/lr"), nlohmann::json());
    if (!lr.is_number() || lr.get<double>() <= 0.0) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "optimizer.params.lr: expected a positive number, got " + lr.dump());
    }
    auto sgd = std::make_unique<Sgd>();
    sgd->host = strata::sdk::Host(in.host);
    sgd->lr = lr.get<double>();
    sgd->host.log(STRATA_LOG_INFO, "oot_sgd: plain SGD, lr %g", sgd->lr);
    *self = sgd.release();
  });
}

void destroy(void* self) { delete static_cast<Sgd*>(self); }

strata_status query(void*, strata_offload_caps* caps, strata_error* err) {
  return guard(err, [&] {
    if (STRATA_STRUCT_HAS(caps, strata_offload_caps, device_type)) caps->device_type = STRATA_DEVICE_HOST;
    if (STRATA_STRUCT_HAS(caps, strata_offload_caps, optimizer)) caps->optimizer = "sgd";
  });
}

strata_status init_state(void*, const strata_shard*, size_t, strata_error* err) {
  return guard(err, [] {});  // plain SGD keeps no optimizer state
}

strata_status step(void* self, const strata_shard* shards, size_t count, const strata_step_args* args,
                   strata_error* err) {
  return guard(err, [&] {
    const auto* sgd = static_cast<const Sgd*>(self);
    const double factor = sgd->lr * args->lr_factor * args->grad_scale;
    for (size_t s = 0; s < count; ++s) {
      for (uint64_t i = 0; i < shards[s].count; ++i) {
        shards[s].master[i] -= static_cast<float>(factor * shards[s].grad[i]);
      }
    }
  });
}

constexpr strata_offload_ops kOps = {strata::sdk::ops_header<strata_offload_ops>(), create, destroy,
                                     query, init_state, step};

}  // namespace

// Needs nothing newer than ABI 1.3: the SDK's Host asks log_enabled only where the runtime has it.
STRATA_PLUGIN(kOps, "oot-sgd", "1.0", "plain SGD built out of tree")
