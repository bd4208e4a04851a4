#include "config.hpp"

#include <cmath>
#include <cstdio>
#include <strata/plugin.hpp>
#include <strata_common/config_reader.hpp>
#include <string>

namespace strata::amp {
namespace {

using namespace common::config;

// A double as a person writes it: 65536, 0.03125, 1.2676506002282294e+30.
std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

bool any_number(double) { return true; }
bool finite_non_negative(double x) { return std::isfinite(x) && x >= 0.0; }
bool finite_positive(double x) { return std::isfinite(x) && x > 0.0; }

// Reads the fp16 block's loss-scaling keys into config.scaler. Types are checked whether or not
// the block is enabled (as DeepSpeed's config model does); ranges of the dynamic scaler's keys only
// when dynamic scaling is in effect, the only time DeepSpeed reads them. Keys are read in the
// order an unknown key's message lists them.
void read_fp16(ObjectReader& fp16, bool enabled, PrecisionConfig& config) {
  LossScalerConfig& s = config.scaler;
  const bool auto_cast = fp16.boolean("auto_cast", false);
  s.static_scale = fp16.number("loss_scale", 0.0, finite_non_negative,
                               "a finite number >= 0 (0 = dynamic scaling)");
  const bool dynamic = enabled && s.static_scale == 0.0;
  // Outside dynamic scaling, any whole number (the type alone is checked).
  const auto at_least = [&](int64_t least) { return dynamic ? least : INT64_MIN; };
  const int64_t power = fp16.whole_number(
      "initial_scale_power", 16, at_least(-126), dynamic ? 127 : INT64_MAX,
      "an integer from -126 to 127 (2^power must be a normal fp32 value)");
  s.window = fp16.whole_number("loss_scale_window", 1000, at_least(1), INT64_MAX,
                               "an integer >= 1 with dynamic loss scaling");
  s.hysteresis = fp16.whole_number("hysteresis", 2, at_least(1), INT64_MAX, "an integer >= 1");
  s.consecutive_hysteresis = fp16.boolean("consecutive_hysteresis", false);
  s.min_scale = fp16.number("min_loss_scale", 1.0, dynamic ? finite_positive : any_number,
                            "a finite number > 0");
  const bool fp16_masters = fp16.boolean("fp16_master_weights_and_grads", false);
  fp16.reject_unknown();
  if (!enabled) return;

  if (dynamic) {
    s.initial_scale = std::ldexp(1.0, static_cast<int>(power));
    // The dynamic scale starts at 2^initial_scale_power and only ever halves down to
    // min_loss_scale; a floor above the start would make the first overflow raise the scale
    // (DeepSpeed's max(scale / 2, min_scale)) instead of lowering it.
    if (s.min_scale > s.initial_scale) {
      const json* written = fp16.find("min_loss_scale");
      const std::string min_text =
          written != nullptr ? shown(*written) : number_text(s.min_scale) + " (its default)";
      fp16.invalid("min_loss_scale",
                   min_text + " is above the initial loss scale " + number_text(s.initial_scale) +
                       " (2^fp16.initial_scale_power, initial_scale_power = " +
                       std::to_string(power) + "); expected min_loss_scale <= 2^initial_scale_power");
    }
  }
  if (auto_cast) {
    config.warnings.push_back(
        "fp16.auto_cast: true has no effect in Strata; the host casts its own inputs");
  }
  if (fp16_masters) {
    config.warnings.push_back(
        "fp16.fp16_master_weights_and_grads: true has no effect in Strata; the sharding stratum "
        "keeps fp32 master weights");
  }
}

void read_bf16(ObjectReader& bf16, bool enabled, PrecisionConfig& config) {
  const bool immediate = bf16.boolean("immediate_grad_update", false);
  const bool check = bf16.boolean("check_grad_overflow", true);
  const bool bf16_masters = bf16.boolean("bf16_master_weights_and_grads", false);
  const bool bf16_states = bf16.boolean("bf16_optimizer_states", false);
  bf16.reject_unknown();
  if (!enabled) return;
  if (immediate) {
    config.warnings.push_back(
        "bf16.immediate_grad_update: true has no effect in Strata; gradients are applied at the "
        "optimizer step");
  }
  if (!check) {
    config.warnings.push_back(
        "bf16.check_grad_overflow: false has no effect in Strata; bf16 gradients are always "
        "checked and a non-finite step is skipped with a warning");
  }
  if (bf16_masters || bf16_states) {
    config.warnings.push_back(
        std::string(bf16_masters ? "bf16.bf16_master_weights_and_grads"
                                 : "bf16.bf16_optimizer_states") +
        ": true has no effect in Strata; master weights and optimizer state stay fp32");
  }
}

strata_dtype dtype_named(const std::string& name) {
  return name == "fp16" ? STRATA_F16 : name == "bf16" ? STRATA_BF16 : STRATA_F32;
}

}  // namespace

PrecisionConfig parse_precision_config(const char* json_text) {
  const json root = parse_object(json_text, "config");
  // The root's keys are named bare ("dtype", "fp16.enabled"). Null is absent, and numbers may be
  // written as strings, as DeepSpeed's pydantic blocks allow.
  ObjectReader top(root, "", ".", Nulls::absent, NumberStrings::accepted);
  ObjectReader fp16 = top.object("fp16"), bf16 = top.object("bf16");
  const bool fp16_on = fp16.boolean("enabled", false), bf16_on = bf16.boolean("enabled", false);
  if (fp16_on && bf16_on) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
              "fp16.enabled and bf16.enabled are both true; choose one");
  }
  PrecisionConfig config;
  config.model_dtype = fp16_on ? STRATA_F16 : bf16_on ? STRATA_BF16 : STRATA_F32;
  const std::string named = top.choice("dtype", "", {"fp32", "fp16", "bf16"},
                                       {{"float32", "fp32"},
                                        {"float16", "fp16"},
                                        {"half", "fp16"},
                                        {"bfloat16", "bf16"}});
  if (!named.empty()) {
    // The blocks may stay silent or agree; an explicit `enabled` saying otherwise is a conflict.
    const strata_dtype dtype = dtype_named(named);
    const auto check_agrees = [&](ObjectReader& block, bool on, strata_dtype block_dtype) {
      if (block.find("enabled") != nullptr && on != (dtype == block_dtype)) {
        top.invalid("dtype", shown(*top.find("dtype")) + " contradicts " + block.path("enabled") +
                                 " = " + (on ? "true" : "false"));
      }
    };
    check_agrees(fp16, fp16_on, STRATA_F16);
    check_agrees(bf16, bf16_on, STRATA_BF16);
    config.model_dtype = dtype;
  }
  read_fp16(fp16, config.model_dtype == STRATA_F16, config);
  read_bf16(bf16, config.model_dtype == STRATA_BF16, config);
  config.threads = static_cast<unsigned>(top.unsigned_integer(
      "threads", 0, 0, 1024,
      "an integer from 0 to 1024 (0 = this rank's share of the hardware threads)"));
  top.reject_unknown(" in the precision config");
  return config;
}

}  // namespace strata::amp
