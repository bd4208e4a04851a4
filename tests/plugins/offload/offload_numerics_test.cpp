// Each optimizer of strata_offload against the double-precision reference: 1,000 steps of random
// gradients over shards of odd sizes, with grad_scale and lr_factor varying between steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "optim_harness.hpp"
#include "reference_optimizers.hpp"

namespace strata::test {
namespace {

enum class Kind { sgd, adam };

struct Case {
  std::string name;
  std::string config;  // the plugin's config text
  Kind kind;
  ReferenceSgd sgd;  // the same settings, written out independently (defaults included)
  ReferenceAdam adam;
};

ReferenceSgd sgd(double lr, double momentum, double dampening, double wd, bool nesterov) {
  ReferenceSgd r;
  r.lr = lr, r.momentum = momentum, r.dampening = dampening, r.weight_decay = wd;
  r.nesterov = nesterov;
  return r;
}
ReferenceAdam adam(double lr, double wd, bool decoupled, bool bias_correction = true) {
  ReferenceAdam r;
  r.lr = lr, r.weight_decay = wd, r.decoupled = decoupled, r.bias_correction = bias_correction;
  return r;
}

std::vector<Case> cases() {
  const auto opt = [](const char* type, const char* params) {
    return std::string(R"({"optimizer": {"type": ")") + type + R"(", "params": )" + params + "}}";
  };
  return {
      {"SgdPlain", opt("SGD", R"({"lr": 0.01})"), Kind::sgd, sgd(0.01, 0, 0, 0, false), {}},
      {"SgdPlainWeightDecay",
       opt("sgd", R"({"lr": 0.01, "weight_decay": 0.05})"),
       Kind::sgd,
       sgd(0.01, 0, 0, 0.05, false),
       {}},
      {"SgdMomentum",
       opt("SGD", R"({"lr": 0.01, "momentum": 0.9})"),
       Kind::sgd,
       sgd(0.01, 0.9, 0, 0, false),
       {}},
      {"SgdMomentumDampeningWeightDecay",
       opt("SGD", R"({"lr": 0.01, "momentum": 0.8, "dampening": 0.3, "weight_decay": 0.02})"),
       Kind::sgd,
       sgd(0.01, 0.8, 0.3, 0.02, false),
       {}},
      {"SgdNesterov",
       opt("SGD", R"({"lr": 0.01, "momentum": 0.9, "nesterov": true})"),
       Kind::sgd,
       sgd(0.01, 0.9, 0, 0, true),
       {}},
      {"SgdNesterovWeightDecay",
       opt("SGD", R"({"lr": 0.01, "momentum": 0.9, "nesterov": true, "weight_decay": 0.05})"),
       Kind::sgd,
       sgd(0.01, 0.9, 0, 0.05, true),
       {}},
      {"AdamDefaults", opt("Adam", "{}"), Kind::adam, {}, adam(1e-3, 0, true)},
      {"AdamWModeWeightDecay",
       opt("Adam", R"({"lr": 0.002, "weight_decay": 0.1})"),
       Kind::adam,
       {},
       adam(0.002, 0.1, true)},
      {"AdamL2WeightDecay",
       opt("ADAM", R"({"lr": 0.002, "weight_decay": 0.1, "adam_w_mode": false})"),
       Kind::adam,
       {},
       adam(0.002, 0.1, false)},
      {"AdamL2NoWeightDecay",
       opt("Adam", R"({"lr": 0.002, "adam_w_mode": false})"),
       Kind::adam,
       {},
       adam(0.002, 0, false)},
      {"AdamNoBiasCorrection",
       opt("Adam", R"({"lr": 0.001, "bias_correction": false})"),
       Kind::adam,
       {},
       adam(0.001, 0, true, false)},
      {"AdamWDefaultWeightDecay",
       opt("AdamW", R"({"lr": 0.003})"),
       Kind::adam,
       {},
       adam(0.003, 0.01, true)},
      {"AdamWNoWeightDecay",
       opt("adamw", R"({"lr": 0.003, "weight_decay": 0, "betas": [0.8, 0.99], "eps": 1e-6})"),
       Kind::adam,
       {},
       [] {
         ReferenceAdam r = adam(0.003, 0, true);
         r.beta1 = 0.8, r.beta2 = 0.99, r.eps = 1e-6;
         return r;
       }()},
  };
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name << " " << c.config; }

class OptimizerMatchesReference : public ::testing::TestWithParam<Case> {};

TEST_P(OptimizerMatchesReference, ThousandStepsWithinRelativeError) {
  const Case& c = GetParam();
  FakeHost host;
  Instance<strata_offload_ops> opt(offload_ops(), host, c.config);
  ASSERT_EQ(opt.status(), STRATA_OK) << opt.message();

  ShardSet shards({1, 7, 33, 129, 255, 3, 515, 17});
  std::mt19937 rng(20240607u);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<double> ref_param;
  for (size_t s = 0; s < shards.size(); ++s) {
    for (float& x : shards.master(s)) {
      x = normal(rng);
      ref_param.push_back(x);
    }
  }
  strata_error err = sdk::make_error();
  ASSERT_EQ(opt.ops().init_state(opt.self(), shards.data(), shards.size(), &err), STRATA_OK)
      << err.message;

  ReferenceSgd ref_sgd = c.sgd;
  ReferenceAdam ref_adam = c.adam;
  std::vector<double> ref_grad(ref_param.size());
  constexpr unsigned long kSteps = 1000;
  for (unsigned long t = 1; t <= kSteps; ++t) {
    const double grad_scale = t % 4 == 0 ? 0.37 : (t % 9 == 0 ? 2.5 : 1.0);
    const double lr_factor = t % 7 == 0 ? 0.5 : (t % 11 == 0 ? 1.7 : 1.0);
    size_t k = 0;
    for (size_t s = 0; s < shards.size(); ++s) {
      for (float& g : shards.grad(s)) {
        g = normal(rng);
        ref_grad[k++] = static_cast<double>(g) * grad_scale;
      }
    }
    strata_step_args args = sdk::make_step_args(t, grad_scale, lr_factor);
    ASSERT_EQ(opt.ops().step(opt.self(), shards.data(), shards.size(), &args, &err), STRATA_OK)
        << err.message;
    if (c.kind == Kind::sgd) {
      ref_sgd.step(ref_param, ref_grad, lr_factor);
    } else {
      ref_adam.step(ref_param, ref_grad, lr_factor, t);
    }
  }

  // Two measures. The vector's relative error ||p - ref|| / ||ref|| is what the brief bounds by
  // 1e-5. Per element, |p - ref| / max(|ref|, 1) catches a wrong value hidden in a small shard;
  // a bare per-element relative error is not meaningful for elements that pass near zero, where
  // fp32's rounding of the parameter itself dominates.
  double diff2 = 0.0, ref2 = 0.0, max_element = 0.0;
  size_t k = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    for (float x : shards.master(s)) {
      const double ref = ref_param[k++];
      ASSERT_TRUE(std::isfinite(x));
      const double d = std::abs(x - ref);
      max_element = std::max(max_element, d / std::max(std::abs(ref), 1.0));
      diff2 += d * d;
      ref2 += ref * ref;
    }
  }
  const double rel = std::sqrt(diff2 / ref2);
  std::printf("[ figures  ] %-32s relative error %.2e, worst element %.2e after %lu steps\n",
              c.name.c_str(), rel, max_element, kSteps);
  RecordProperty("relative_error", std::to_string(rel));
  RecordProperty("worst_element_error", std::to_string(max_element));
  EXPECT_LE(rel, 1e-5);
  EXPECT_LE(max_element, 5e-5);
}

INSTANTIATE_TEST_SUITE_P(Offload, OptimizerMatchesReference, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace strata::test
