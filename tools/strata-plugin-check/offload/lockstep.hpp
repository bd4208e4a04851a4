// The offload plugin and the double-precision reference stepped side by side over the same
// shards, with the same step schedule, each from its own parameters.
//
// Gradients depend on the parameters (g = a_i * (1 + 0.3 sin(0.05 t + i)) + 0.05 p: a drift
// whose sign never changes over the run, plus a pull towards a far minimum), so a wrong step
// feeds into every later gradient, and Lion's sign(c) never sits near 0, where fp32 and double
// could disagree. The plugin gets raw gradients g / grad_scale and must multiply them back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "offload/reference_optimizer.hpp"
#include "precision/instance.hpp"

namespace strata::plugin_check {

// One optimizer the checks ask for: its DeepSpeed block and the reference's settings.
struct OptimizerCase {
  std::string name;      // check name part: "adam", "sgd_nesterov", ...
  std::string claimed;   // what caps.optimizer must say (case-insensitive)
  nlohmann::json block;  // {"type": ..., "params": {...}}
  Hyper hyper;
};

std::vector<OptimizerCase> optimizer_cases();

// |got - expected| <= kParamTolerance * max(|expected|, 1) for every parameter after every step:
// fp32 storage drifts from the double trajectory by a few 1e-7 per step, a few 1e-6 over a
// thousand (tests/plugins/offload bound the same runs by 5e-5 per element); a wrong formula (bias
// correction, decay, grad_scale ignored) is off by 1e-4 and more within the first steps.
constexpr double kParamTolerance = 5e-5;

// Fp32 shards of three parameters (1, 7 and 1000 elements, at offsets 0, 3 and 100), their
// masters, gradients and, when asked for, model copies.
class ShardSet {
 public:
  ShardSet();
  size_t size() const { return master_.size(); }
  size_t elements() const;
  std::vector<float>& master(size_t s) { return master_[s]; }
  std::vector<float>& grad(size_t s) { return grad_[s]; }
  std::vector<uint16_t>& model(size_t s) { return model_[s]; }
  // Shard s gets a model copy of `dtype` (STRATA_F16 or STRATA_BF16).
  void want_model_copy(size_t s, int32_t dtype);
  int32_t model_dtype(size_t s) const { return model_dtype_[s]; }
  std::vector<strata_shard> list();
  // The masters, all shards in order, as doubles.
  std::vector<double> flat_masters() const;

 private:
  std::vector<std::vector<float>> master_, grad_;
  std::vector<std::vector<uint16_t>> model_;
  std::vector<int32_t> model_dtype_;
};

class Lockstep {
 public:
  // `configured`: the case's settings; `step_args`: whether the plugin reads the ABI 1.6 lr,
  // momentum and beta2 step args (else they stay NaN).
  Lockstep(Instance<strata_offload_ops>& plugin, ShardSet& shards, const Hyper& configured,
           bool step_args);

  ReferenceOptimizer& reference() { return reference_; }
  // Steps both once with step number t; returns the first parameter beyond the tolerance as
  // "step T, shard S, element E: expected X, got Y", or empty.
  std::string step(uint64_t t);
  // init_state on the plugin (before the first step).
  void init_state();
  // The largest |got - expected| / max(|expected|, 1) seen so far, for the pass line.
  double worst() const { return worst_; }

 private:
  strata_step_args args_for(uint64_t t, StepHyper& k) const;

  Instance<strata_offload_ops>& plugin_;
  ShardSet& shards_;
  Hyper hyper_;
  bool step_args_;
  ReferenceOptimizer reference_;
  double worst_ = 0.0;
};

// "step 5, shard 2, element 17": where element `flat` of the flattened shards lies.
std::string where(const ShardSet& shards, uint64_t t, size_t flat);

}  // namespace strata::plugin_check
