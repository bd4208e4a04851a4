// Lion through the offload plugin: DeepSpeed's "Lion" optimizer block (lr, betas, weight_decay),
// its state accounting and 1,000 steps against the double-precision reference on fp32 storage
// (see cpu_reference.hpp for why fp32 storage).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cpu_reference.hpp"
#include "cpu_test_support.hpp"
#include "optim_harness.hpp"

namespace strata::test {
namespace {

std::string lion_config(const std::string& params) {
  return R"({"optimizer": {"type": "Lion", "params": )" + params + "}}";
}

// Steps the plugin and the reference (fp32 storage, double arithmetic) side by side; returns the
// errors after `steps`.
Errors run_against_reference(const std::string& config, const LionSettings& settings,
                             unsigned long steps) {
  LionReference<float> ref(settings);
  FakeHost host;
  Instance<strata_offload_ops> opt(offload_ops(), host, config);
  EXPECT_EQ(opt.status(), STRATA_OK) << opt.message();
  if (opt.status() != STRATA_OK) return {INFINITY, INFINITY};
  ShardSet shards({1, 7, 33, 129, 255, 3, 515, 17});
  std::mt19937 rng(99u);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> ref_param;
  for (size_t s = 0; s < shards.size(); ++s) {
    for (float& x : shards.master(s)) ref_param.push_back(x = normal(rng));
  }
  strata_error err = sdk::make_error();
  EXPECT_EQ(opt.ops().init_state(opt.self(), shards.data(), shards.size(), &err), STRATA_OK)
      << err.message;
  EXPECT_EQ(host.bytes(STRATA_MEM_OPTIMIZER_STATE), sizeof(float) * shards.elements());
  std::vector<double> ref_grad(ref_param.size());
  for (unsigned long t = 1; t <= steps; ++t) {
    const double grad_scale = t % 4 == 0 ? 0.37 : 1.0;
    const double lr_factor = t % 7 == 0 ? 0.5 : 1.0;
    size_t k = 0;
    for (size_t s = 0; s < shards.size(); ++s) {
      for (float& g : shards.grad(s)) {
        // Away from c = 0, where fp32 and double may disagree on sign(c).
        do {
          g = normal(rng);
        } while (std::abs(ref.direction(k, g * grad_scale)) < 1e-4);
        ref_grad[k++] = static_cast<double>(g) * grad_scale;
      }
    }
    strata_step_args args = sdk::make_step_args(t, grad_scale, lr_factor);
    EXPECT_EQ(opt.ops().step(opt.self(), shards.data(), shards.size(), &args, &err), STRATA_OK)
        << err.message;
    ref.step(ref_param, ref_grad, lr_factor);
  }
  std::vector<float> params;
  for (size_t s = 0; s < shards.size(); ++s) {
    params.insert(params.end(), shards.master(s).begin(), shards.master(s).end());
  }
  return compare(params, ref_param);
}

TEST(CpuLionPlugin, ThousandStepsMatchTheReference) {
  LionSettings ref;
  ref.lr = 3e-4, ref.beta1 = 0.95, ref.beta2 = 0.98, ref.weight_decay = 0.1;
  const Errors e = run_against_reference(
      lion_config(R"({"lr": 3e-4, "betas": [0.95, 0.98], "weight_decay": 0.1})"), ref, 1000);
  std::printf("[ figures  ] Lion via the plugin: relative error %.2e, worst element %.2e\n",
              e.relative, e.worst_element);
  EXPECT_LE(e.relative, 1e-6);
  EXPECT_LE(e.worst_element, 1e-5);
}

TEST(CpuLionPlugin, DefaultsAreDeepSpeedsLion) {
  LionSettings ref;  // betas 0.9, 0.99 and weight_decay 0 by default; DeepSpeed's lr 1e-3
  ref.lr = 1e-3;
  const Errors e = run_against_reference(R"({"optimizer": {"type": "lion"}})", ref, 50);
  EXPECT_LE(e.relative, 1e-6);
}

TEST(CpuLionPlugin, QueryNamesLion) {
  FakeHost host;
  Instance<strata_offload_ops> opt(offload_ops(), host, lion_config("{}"));
  ASSERT_EQ(opt.status(), STRATA_OK) << opt.message();
  strata_offload_caps caps{};
  caps.struct_size = sizeof(caps);
  strata_error err = sdk::make_error();
  ASSERT_EQ(opt.ops().query(opt.self(), &caps, &err), STRATA_OK) << err.message;
  EXPECT_STREQ(caps.optimizer, "lion");
}

TEST(CpuLionPlugin, BadSettingsNameTheKey) {
  FakeHost host;
  const struct {
    std::string params, message;
  } bad[] = {
      {R"({"betas": [0.9, 1.0]})", "optimizer.params.betas: expected two numbers in [0, 1)"},
      {R"({"lr": -1})", "optimizer.params.lr: expected a positive finite number, got -1"},
      {R"({"weight_decay": -0.1})", "optimizer.params.weight_decay: expected a non-negative"},
      {R"({"eps": 1e-8})",
       "optimizer.params.eps: unknown key for lion; expected one of lr, betas, weight_decay"},
  };
  for (const auto& b : bad) {
    Instance<strata_offload_ops> opt(offload_ops(), host, lion_config(b.params));
    EXPECT_EQ(opt.status(), STRATA_ERR_INVALID_ARGUMENT) << b.params;
    EXPECT_NE(opt.message().find(b.message), std::string::npos) << opt.message();
  }
}

}  // namespace
}  // namespace strata::test
