#include "offload/lockstep.hpp"

#include <algorithm>
#include <cmath>

namespace strata::plugin_check {

std::vector<OptimizerCase> optimizer_cases() {
  using nlohmann::json;
  const auto block = [](const char* type, json params) {
    return json{{"type", type}, {"params", std::move(params)}};
  };
  Hyper adam{OptimizerKind::adam, 1e-3, 0.9, 0.999, 1e-8, 0.05, false, false};
  Hyper adamw = adam;
  adamw.lr = 2e-3, adamw.decoupled = true, adamw.weight_decay = 0.1;
  Hyper sgd{OptimizerKind::sgd, 0.01, 0.0, 0.0, 0.0, 0.05, false, false};
  Hyper momentum = sgd;
  momentum.beta1 = 0.9;
  Hyper nesterov = momentum;
  nesterov.nesterov = true;
  Hyper lion{OptimizerKind::lion, 3e-4, 0.9, 0.99, 0.0, 0.1, false, false};
  return {
      // DeepSpeed's "Adam" decouples the decay unless adam_w_mode is false: ask for torch's Adam.
      {"adam", "adam",
       block("Adam", {{"lr", 1e-3},
                      {"betas", {0.9, 0.999}},
                      {"eps", 1e-8},
                      {"weight_decay", 0.05},
                      {"adam_w_mode", false}}),
       adam},
      {"adamw", "adamw",
       block("AdamW",
             {{"lr", 2e-3}, {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"weight_decay", 0.1}}),
       adamw},
      {"sgd", "sgd", block("SGD", {{"lr", 0.01}, {"weight_decay", 0.05}}), sgd},
      {"sgd_momentum", "sgd",
       block("SGD", {{"lr", 0.01}, {"momentum", 0.9}, {"weight_decay", 0.05}}), momentum},
      {"sgd_nesterov", "sgd",
       block("SGD", {{"lr", 0.01}, {"momentum", 0.9}, {"nesterov", true}, {"weight_decay", 0.05}}),
       nesterov},
      {"lion", "lion", block("Lion", {{"lr", 3e-4}, {"betas", {0.9, 0.99}}, {"weight_decay", 0.1}}),
       lion},
  };
}

namespace {

constexpr size_t kCounts[] = {1, 7, 1000};
constexpr uint64_t kOffsets[] = {0, 3, 100};

// The gradient of element `i` (of the flattened shards) at step t, from its parameter p.
double gradient(double p, size_t i, uint64_t t) {
  const double magnitude = 0.3 + 0.7 * std::fmod(static_cast<double>(i) * 0.6180339887, 1.0);
  const double a = i % 2 == 0 ? magnitude : -magnitude;
  return a * (1.0 + 0.3 * std::sin(0.05 * static_cast<double>(t) + static_cast<double>(i))) +
         0.05 * p;
}

}  // namespace

ShardSet::ShardSet() {
  size_t flat = 0;
  for (size_t n : kCounts) {
    std::vector<float> m(n);
    for (float& x : m)
      x = static_cast<float>(1.5 * std::sin(1.3 * static_cast<double>(flat++) + 0.5));
    master_.push_back(std::move(m));
    grad_.emplace_back(n, 0.0f);
    model_.emplace_back();
    model_dtype_.push_back(STRATA_F16);
  }
}

size_t ShardSet::elements() const {
  size_t n = 0;
  for (const auto& m : master_) n += m.size();
  return n;
}

void ShardSet::want_model_copy(size_t s, int32_t dtype) {
  model_[s].assign(master_[s].size(), 0);
  model_dtype_[s] = dtype;
}

std::vector<strata_shard> ShardSet::list() {
  std::vector<strata_shard> list;
  for (size_t s = 0; s < master_.size(); ++s) {
    strata_shard shard{};
    shard.struct_size = sizeof(shard);
    shard.param_index = static_cast<uint32_t>(s);
    shard.offset = kOffsets[s];
    shard.count = master_[s].size();
    shard.master = master_[s].data();
    shard.grad = grad_[s].data();
    shard.model = model_[s].empty() ? nullptr : model_[s].data();
    shard.model_dtype = model_dtype_[s];
    list.push_back(shard);
  }
  return list;
}

std::vector<double> ShardSet::flat_masters() const {
  std::vector<double> flat;
  for (const auto& m : master_) flat.insert(flat.end(), m.begin(), m.end());
  return flat;
}

std::string where(const ShardSet& shards, uint64_t t, size_t flat) {
  size_t s = 0;
  for (; s < shards.size() && flat >= kCounts[s]; ++s) flat -= kCounts[s];
  return "step " + std::to_string(t) + ", shard " + std::to_string(s) + ", element " +
         std::to_string(flat);
}

Lockstep::Lockstep(Instance<strata_offload_ops>& plugin, ShardSet& shards, const Hyper& configured,
                   bool step_args)
    : plugin_(plugin),
      shards_(shards),
      hyper_(configured),
      step_args_(step_args),
      reference_(configured, shards.flat_masters()) {}

void Lockstep::init_state() {
  const std::vector<strata_shard> list = shards_.list();
  strata_error err = sdk::make_error();
  expect_ok(plugin_.ops().init_state(plugin_.self(), list.data(), list.size(), &err), err,
            "init_state");
}

// The schedule: grad_scale 2^-10 (an fp16 unscale) every 5th step and 0.3 (a clip) every 7th;
// lr_factor 0.5 every 3rd and 1.7 every 11th; with ABI 1.6 step args, lr replaced every 10th
// step (the 4th of ten) and beta1/momentum and beta2 on the 7th of ten. Plain SGD has no
// momentum to replace.
strata_step_args Lockstep::args_for(uint64_t t, StepHyper& k) const {
  strata_step_args args = sdk::make_step_args(t, t % 5 == 0 ? 1.0 / 1024 : (t % 7 == 0 ? 0.3 : 1.0),
                                              t % 3 == 0 ? 0.5 : (t % 11 == 0 ? 1.7 : 1.0));
  k = {t, hyper_.lr, hyper_.beta1, hyper_.beta2};
  if (step_args_ && t % 10 == 4) args.lr = k.lr = hyper_.lr * 0.7;
  if (step_args_ && t % 10 == 7 && hyper_.beta1 > 0) {
    args.momentum = k.beta1 = hyper_.kind == OptimizerKind::sgd ? 0.8 : 0.85;
    if (hyper_.kind != OptimizerKind::sgd) args.beta2 = k.beta2 = 0.99;
  }
  k.lr *= args.lr_factor;
  return args;
}

std::string Lockstep::step(uint64_t t) {
  StepHyper k{};
  const strata_step_args args = args_for(t, k);
  std::vector<double>& ref = reference_.params();
  std::vector<double> ref_grad(ref.size());
  size_t flat = 0;
  for (size_t s = 0; s < shards_.size(); ++s) {
    const std::vector<float>& master = shards_.master(s);
    for (size_t e = 0; e < master.size(); ++e, ++flat) {
      shards_.grad(s)[e] = static_cast<float>(gradient(master[e], flat, t) / args.grad_scale);
      ref_grad[flat] = gradient(ref[flat], flat, t);
    }
  }
  const std::vector<strata_shard> list = shards_.list();
  strata_error err = sdk::make_error();
  expect_ok(plugin_.ops().step(plugin_.self(), list.data(), list.size(), &args, &err), err,
            "step " + std::to_string(t));
  reference_.step(ref_grad, k);
  flat = 0;
  for (size_t s = 0; s < shards_.size(); ++s) {
    for (float got : shards_.master(s)) {
      const double want = ref[flat++];
      const double error = std::abs(got - want) / std::max(std::abs(want), 1.0);
      worst_ = std::max(worst_, error);
      if (!(error <= kParamTolerance)) {
        return where(shards_, t, flat - 1) + ": expected " + number_text(want) + ", got " +
               number_text(got);
      }
    }
  }
  return {};
}

}  // namespace strata::plugin_check
