// A plugin of your own, to copy: an offload plugin running plain SGD,
//   p -= lr * (grad_scale * g + weight_decay * p)       (torch.optim.SGD without momentum)
// on the fp32 master shards the sharding plugin hands it, with no optimizer state.
// Config: the manifest's DeepSpeed block, {"optimizer": {"type": "SGD", "params": {"lr": 0.5,
// "weight_decay": 0.0}}}. What it does not do (momentum, another optimizer type) it refuses at
// create, naming the key: a plugin that quietly ignored a setting would train something else
// than the job asked for. Check it with strata-plugin-check (README.md, "Writing a plugin").
#include <strata/plugin.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>
#include <string>

namespace {

using nlohmann::json;
using strata::sdk::fail;
using strata::sdk::guard;

struct Sgd {
  strata::sdk::Host host;
  double lr = 0.0;
  double weight_decay = 0.0;
};

// optimizer.params.<key> as a number, or `fallback` when absent.
double number(const json& params, const char* key, double fallback) {
  if (!params.contains(key)) return fallback;
  if (!params[key].is_number()) {
    fail(STRATA_ERR_INVALID_ARGUMENT,
         std::string("optimizer.params.") + key + ": expected a number, got " + params[key].dump());
  }
  return params[key].get<double>();
}

strata_status create(const strata_plugin_create_args* args, void** self, strata_error* err) {
  return guard(err, [&] {
    const strata::sdk::CreateArgs in = strata::sdk::read_create_args(args);
    const json config = json::parse(in.config_json);
    const json optimizer = config.value("optimizer", json::object());
    const std::string type = optimizer.value("type", std::string("SGD"));
    if (type != "SGD" && type != "sgd") {
      fail(STRATA_ERR_INVALID_ARGUMENT, "optimizer.type: this plugin runs SGD, not " + type);
    }
    const json params = optimizer.value("params", json::object());
    auto sgd = std::make_unique<Sgd>();
    sgd->lr = number(params, "lr", 0.0);
    sgd->weight_decay = number(params, "weight_decay", 0.0);
    if (!(sgd->lr > 0.0)) fail(STRATA_ERR_INVALID_ARGUMENT, "optimizer.params.lr: expected > 0");
    if (number(params, "momentum", 0.0) != 0.0 || params.value("nesterov", false)) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "optimizer.params.momentum: this plugin has no momentum");
    }
    sgd->host = strata::sdk::Host(in.host);
    sgd->host.log(STRATA_LOG_INFO, "my_sgd: plain SGD, lr %g", sgd->lr);
    *self = sgd.release();
  });
}

void destroy(void* self) { delete static_cast<Sgd*>(self); }

strata_status query(void* self, strata_offload_caps* caps, strata_error* err) {
  return guard(err, [&] {
    const auto* sgd = static_cast<const Sgd*>(self);
    if (STRATA_STRUCT_HAS(caps, strata_offload_caps, device_type)) caps->device_type = STRATA_DEVICE_HOST;
    if (STRATA_STRUCT_HAS(caps, strata_offload_caps, optimizer)) caps->optimizer = "sgd";
    if (STRATA_STRUCT_HAS(caps, strata_offload_caps, writes_model_copy)) caps->writes_model_copy = 0;
    // ABI 1.6: what a learning-rate schedule starts from; no momentum.
    if (STRATA_STRUCT_HAS(caps, strata_offload_caps, lr)) caps->lr = sgd->lr;
    if (STRATA_STRUCT_HAS(caps, strata_offload_caps, momentum)) caps->momentum = std::nan("");
  });
}

strata_status init_state(void*, const strata_shard*, size_t, strata_error* err) {
  return guard(err, [] {});  // plain SGD keeps no optimizer state
}

strata_status step(void* self, const strata_shard* shards, size_t count, const strata_step_args* args,
                   strata_error* err) {
  return guard(err, [&] {
    const auto* sgd = static_cast<const Sgd*>(self);
    // ABI 1.6: a schedule's learning rate for this step, else the configured one (a runtime of
    // 1.3-1.5 hands a smaller struct without it).
    const double lr = strata::sdk::step_lr(*args, sgd->lr) * args->lr_factor;
    for (size_t s = 0; s < count; ++s) {
      float* p = shards[s].master;
      const float* g = shards[s].grad;
      for (uint64_t i = 0; i < shards[s].count; ++i) {
        const double d = args->grad_scale * g[i] + sgd->weight_decay * p[i];
        p[i] = static_cast<float>(p[i] - lr * d);
      }
    }
  });
}

constexpr strata_offload_ops kOps = {strata::sdk::ops_header<strata_offload_ops>(), create, destroy,
                                     query, init_state, step};

}  // namespace

// Needs nothing newer than ABI 1.3: the SDK's Host asks log_enabled only where the runtime has it,
// and the 1.6 fields are read only where the runtime's structs have them.
STRATA_PLUGIN(kOps, "my-sgd", "1.0", "plain SGD, the plugin template (examples/plugin_template)")
