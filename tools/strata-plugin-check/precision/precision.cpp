// check_precision: the precision stratum's conformance checks, run in one process against the
// target's strata_precision_ops directly. The scenarios build their own DeepSpeed-shaped configs
// ({"fp16": {...}, "bf16": {...}}, plugins/amp/README.md), merged with the user's --config.
//   loss_scale.*  fp16 scale sequences against DeepSpeed's rules (loss_scale.cpp)
//   no_scaling.*  fp32 and bf16: loss_scale() 1, update never changes it, caps say so
//   cast.*        bit-exact casts against strata/half.hpp (cast.cpp)
//   grad_stats.*  non-finite detection and the fp64 sum of squares (grad_stats.cpp)
#include <cmath>
#include <string>

#include "plugin_instance.hpp"
#include "precision/precision_checks.hpp"

namespace strata::plugin_check {

nlohmann::json fp32_config() {
  return {{"fp16", {{"enabled", false}}}, {"bf16", {{"enabled", false}}}};
}

nlohmann::json bf16_config() {
  return {{"fp16", {{"enabled", false}}}, {"bf16", {{"enabled", true}}}};
}

std::vector<nlohmann::json> format_configs() {
  return {fp32_config(), bf16_config(),
          {{"fp16", {{"enabled", true}}}, {"bf16", {{"enabled", false}}}}};
}

double scale_of(const Instance<strata_precision_ops>& amp) {
  double scale = std::nan("");
  strata_error err = sdk::make_error();
  expect_ok(amp.ops().loss_scale(amp.self(), &scale, &err), err, "loss_scale()");
  return scale;
}

strata_precision_caps caps_of(const Instance<strata_precision_ops>& amp) {
  strata_precision_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.model_dtype = -1;
  caps.dynamic_scaling = -1;
  strata_error err = sdk::make_error();
  expect_ok(amp.ops().query(amp.self(), &caps, &err), err, "query()");
  return caps;
}

std::unique_ptr<Instance<strata_precision_ops>> any_instance(const Target& target,
                                                             std::string& why) {
  why = "no instance: ";
  for (const nlohmann::json& config : format_configs()) {
    auto amp =
        std::make_unique<Instance<strata_precision_ops>>(target, scenario_config(target, config));
    if (amp->ok()) return amp;
    why += amp->refusal() + "; ";
  }
  return nullptr;
}

namespace {

// A format without loss scaling: the caps say so, the scale is 1 and no update changes it (nor
// fails: overflowing steps are skipped by the runtime, not stopped).
Verdict no_scaling(const Target& target, const nlohmann::json& scenario, strata_dtype dtype) {
  const std::string config = scenario_config(target, scenario);
  Instance<strata_precision_ops> amp(target, config);
  const std::string name = sdk::dtype_name(dtype);
  if (!amp.ok()) return Verdict::skip(name + " not claimed: " + amp.refusal());
  const strata_precision_caps caps = caps_of(amp);
  if (caps.model_dtype != dtype) {
    return Verdict::fail("caps.model_dtype with " + config + ": expected " + name + ", got " +
                         sdk::dtype_name(caps.model_dtype));
  }
  if (caps.dynamic_scaling != 0) {
    return Verdict::fail("caps.dynamic_scaling: expected 0, got " +
                         std::to_string(caps.dynamic_scaling));
  }
  // Overflows, clean runs past DeepSpeed's default window of 1000, overflows again.
  const std::string steps = "O..OOO" + std::string(1100, '.') + "OOOO";
  strata_error err = sdk::make_error();
  for (size_t i = 0; i <= steps.size(); ++i) {
    const double scale = scale_of(amp);
    if (scale != 1.0) {
      return Verdict::fail((i == 0 ? std::string("before the first update")
                                   : "after update " + std::to_string(i) + " (" +
                                         (steps[i - 1] == 'O' ? "overflow" : "clean") + ")") +
                           ": expected loss scale 1, got " + number_text(scale));
    }
    if (i == steps.size()) break;
    expect_ok(amp.ops().update(amp.self(), steps[i] == 'O' ? 1 : 0, &err), err,
              "update " + std::to_string(i + 1));
  }
  return Verdict::pass();
}

}  // namespace

void check_precision(const Target& target, Recorder& recorder) {
  std::vector<std::string> configs;
  for (const nlohmann::json& scenario : format_configs()) {
    configs.push_back(scenario_config(target, scenario));
  }
  if (!probe_create<strata_precision_ops>(target, configs, recorder)) return;
  check_loss_scale(target, recorder);
  recorder.run("no_scaling.fp32", [&] { return no_scaling(target, fp32_config(), STRATA_F32); });
  recorder.run("no_scaling.bf16", [&] { return no_scaling(target, bf16_config(), STRATA_BF16); });
  check_casts(target, recorder);
  check_grad_stats(target, recorder);
}

}  // namespace strata::plugin_check
