// A test offload plugin: plain SGD that fails on one rank at one step, as a plugin whose drive
// filled up would. Config (the manifest's "offload": {"config": {...}}): "fail_rank" and
// "fail_step" (1-based applied step); the DeepSpeed "optimizer" block gives the learning rate.
#include <strata/plugin.hpp>

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace {

using strata::sdk::fail;
using strata::sdk::guard;

struct FailingSgd {
  strata::sdk::Host host;
  double lr = 0.1;
  int rank = 0;
  int64_t fail_rank = -1;
  uint64_t fail_step = 0;
};

strata_status create(const strata_plugin_create_args* args, void** self, strata_error* err) {
  return guard(err, [&] {
    const strata::sdk::CreateArgs in = strata::sdk::read_create_args(args);
    const auto config = nlohmann::json::parse(in.config_json);
    auto sgd = std::make_unique<FailingSgd>();
    sgd->host = strata::sdk::Host(in.host);
    sgd->lr = config.value(nlohmann::json::json_pointer("/optimizer/params/lr"), 0.1);
    sgd->fail_rank = config.value("fail_rank", int64_t{-1});
    sgd->fail_step = config.value("fail_step", uint64_t{0});
    if (in.host->comm == nullptr) {
      fail(STRATA_ERR_INTERNAL, "failing-sgd: cannot query the comm stratum for this rank");
    }
    sgd->rank = sgd->host.comm_stratum().query().rank;
    *self = sgd.release();
  });
}

void destroy(void* self) { delete static_cast<FailingSgd*>(self); }

strata_status query(void*, strata_offload_caps* caps, strata_error* err) {
  return guard(err, [&] {
    caps->device_type = STRATA_DEVICE_HOST;
    caps->optimizer = "sgd";
  });
}

strata_status init_state(void*, const strata_shard*, size_t, strata_error* err) {
  return guard(err, [] {});
}

strata_status step(void* self, const strata_shard* shards, size_t count,
                   const strata_step_args* args, strata_error* err) {
  return guard(err, [&] {
    const auto* sgd = static_cast<const FailingSgd*>(self);
    if (sgd->rank == sgd->fail_rank && args->step == sgd->fail_step) {
      fail(STRATA_ERR_INTERNAL, "failing-sgd: simulated failure on rank " +
                                    std::to_string(sgd->rank) + " at step " +
                                    std::to_string(args->step) + " (no space left on device)");
    }
    const double factor = sgd->lr * args->lr_factor * args->grad_scale;
    for (size_t s = 0; s < count; ++s) {
      for (uint64_t i = 0; i < shards[s].count; ++i) {
        shards[s].master[i] -= static_cast<float>(factor * shards[s].grad[i]);
      }
    }
  });
}

// No checkpoint functions (ABI 1.6): this fixture only fails steps.
constexpr strata_offload_ops kOps = {strata::sdk::ops_header<strata_offload_ops>(),
                                     create, destroy, query, init_state, step,
                                     nullptr, nullptr, nullptr, nullptr, nullptr,
                                     nullptr, nullptr, nullptr};

}  // namespace

STRATA_PLUGIN(kOps, "failing-sgd", "1.0", "SGD that fails on one rank at one step (tests)")
