#include "precision_config.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <strata/plugin.hpp>
#include <string>

namespace strata::amp {
namespace {

using nlohmann::json;

// A value as written, shortened: one bad value (a manifest may hold megabytes) must not flood
// the message.
std::string shown(const json& value) {
  std::string text = value.dump();
  return text.size() <= 80 ? text : text.substr(0, 77) + "...";
}

[[noreturn]] void invalid(const std::string& path, const std::string& what) {
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT, path + ": " + what);
}

// One DeepSpeed block ("fp16" or "bf16") and the dotted name its keys are reported under.
struct Block {
  const json* object;  // NULL when absent or null
  std::string name;

  const json* find(const char* key) const {
    if (object == nullptr) return nullptr;
    auto it = object->find(key);
    return it == object->end() ? nullptr : &*it;
  }
  std::string path(const char* key) const { return name + "." + key; }

  void check_keys(std::initializer_list<const char*> known) const {
    if (object == nullptr) return;
    for (const auto& item : object->items()) {
      bool found = false;
      std::string list;
      for (const char* k : known) {
        found = found || item.key() == k;
        list += list.empty() ? k : std::string(", ") + k;
      }
      if (!found) invalid(name + "." + item.key(), "unknown key; expected one of " + list);
    }
  }

  std::optional<bool> flag(const char* key) const {
    const json* v = find(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    if (!v->is_boolean()) invalid(path(key), "expected true or false, got " + shown(*v));
    return v->get<bool>();
  }

  // A number, or a string holding one (DeepSpeed's pydantic fields coerce "128" to 128 too).
  std::optional<double> number(const char* key, const char* expected) const {
    const json* v = find(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    if (v->is_number()) return v->get<double>();
    if (v->is_string()) {
      const std::string& text = v->get_ref<const std::string&>();
      char* end = nullptr;
      const double d = std::strtod(text.c_str(), &end);
      if (!text.empty() && end == text.c_str() + text.size()) return d;
    }
    invalid(path(key), std::string("expected ") + expected + ", got " + shown(*v));
  }

  // An integer-valued number (1000.0 counts, 2.5 does not).
  std::optional<int64_t> integer(const char* key, const char* expected) const {
    const std::optional<double> d = number(key, expected);
    if (!d) return std::nullopt;
    if (!(std::trunc(*d) == *d && std::fabs(*d) < 9e15)) {
      invalid(path(key), std::string("expected ") + expected + ", got " + shown(*find(key)));
    }
    return static_cast<int64_t>(*d);
  }

  void require(bool ok, const char* key, const char* expected) const {
    if (ok) return;
    const json* v = find(key);
    invalid(path(key),
            std::string("expected ") + expected + ", got " + (v ? shown(*v) : "its default"));
  }
};

// A double as a person writes it: 65536, 0.03125, 1.2676506002282294e+30.
std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

Block block(const json& root, const char* key) {
  auto it = root.find(key);
  if (it == root.end() || it->is_null()) return {nullptr, key};
  if (!it->is_object()) invalid(key, "expected an object, got " + shown(*it));
  return {&*it, key};
}

// Reads the fp16 block's loss-scaling keys into config.scaler. Types are checked whether or not
// the block is enabled (as DeepSpeed's config model does); ranges of the dynamic scaler's keys only
// when dynamic scaling is in effect, the only time DeepSpeed reads them.
void read_fp16(const Block& fp16, bool enabled, PrecisionConfig& config) {
  fp16.check_keys({"enabled", "auto_cast", "loss_scale", "initial_scale_power", "loss_scale_window",
                   "hysteresis", "consecutive_hysteresis", "min_loss_scale",
                   "fp16_master_weights_and_grads"});
  LossScalerConfig& s = config.scaler;
  const char* scale_expected = "a finite number >= 0 (0 = dynamic scaling)";
  s.static_scale = fp16.number("loss_scale", scale_expected).value_or(0.0);
  fp16.require(std::isfinite(s.static_scale) && s.static_scale >= 0.0, "loss_scale",
               scale_expected);
  const char* power_expected = "an integer from -126 to 127 (2^power must be a normal fp32 value)";
  const int64_t power = fp16.integer("initial_scale_power", power_expected).value_or(16);
  const char* window_expected = "an integer >= 1 with dynamic loss scaling";
  s.window = fp16.integer("loss_scale_window", window_expected).value_or(1000);
  s.hysteresis = fp16.integer("hysteresis", "an integer >= 1").value_or(2);
  s.consecutive_hysteresis = fp16.flag("consecutive_hysteresis").value_or(false);
  s.min_scale = fp16.number("min_loss_scale", "a finite number > 0").value_or(1.0);
  const bool auto_cast = fp16.flag("auto_cast").value_or(false);
  const bool fp16_masters = fp16.flag("fp16_master_weights_and_grads").value_or(false);
  if (!enabled) return;

  if (s.static_scale == 0.0) {
    fp16.require(power >= -126 && power <= 127, "initial_scale_power", power_expected);
    fp16.require(s.window >= 1, "loss_scale_window", window_expected);
    fp16.require(s.hysteresis >= 1, "hysteresis", "an integer >= 1");
    fp16.require(std::isfinite(s.min_scale) && s.min_scale > 0.0, "min_loss_scale",
                 "a finite number > 0");
    s.initial_scale = std::ldexp(1.0, static_cast<int>(power));
    // The dynamic scale starts at 2^initial_scale_power and only ever halves down to
    // min_loss_scale; a floor above the start would make the first overflow raise the scale
    // (DeepSpeed's max(scale / 2, min_scale)) instead of lowering it.
    if (s.min_scale > s.initial_scale) {
      const json* written = fp16.find("min_loss_scale");
      const std::string min_text =
          written != nullptr ? shown(*written) : number_text(s.min_scale) + " (its default)";
      invalid(fp16.path("min_loss_scale"),
              min_text + " is above the initial loss scale " +
                  number_text(s.initial_scale) + " (2^fp16.initial_scale_power, initial_scale_power = " +
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

void read_bf16(const Block& bf16, bool enabled, PrecisionConfig& config) {
  bf16.check_keys({"enabled", "immediate_grad_update", "check_grad_overflow",
                   "bf16_master_weights_and_grads", "bf16_optimizer_states"});
  const bool immediate = bf16.flag("immediate_grad_update").value_or(false);
  const std::optional<bool> check = bf16.flag("check_grad_overflow");
  const bool bf16_masters = bf16.flag("bf16_master_weights_and_grads").value_or(false);
  const bool bf16_states = bf16.flag("bf16_optimizer_states").value_or(false);
  if (!enabled) return;
  if (immediate) {
    config.warnings.push_back(
        "bf16.immediate_grad_update: true has no effect in Strata; gradients are applied at the "
        "optimizer step");
  }
  if (check == false) {
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

// The `dtype` key, if present: STRATA_F32/F16/BF16.
std::optional<strata_dtype> read_dtype(const json& root) {
  auto it = root.find("dtype");
  if (it == root.end() || it->is_null()) return std::nullopt;
  const std::string name = it->is_string() ? it->get<std::string>() : "";
  if (name == "fp32" || name == "float32") return STRATA_F32;
  if (name == "fp16" || name == "float16" || name == "half") return STRATA_F16;
  if (name == "bf16" || name == "bfloat16") return STRATA_BF16;
  invalid("dtype", "expected \"fp32\", \"fp16\" or \"bf16\", got " + shown(*it));
}

unsigned read_threads(const json& root) {
  auto it = root.find("threads");
  if (it == root.end() || it->is_null()) return 0;
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 1024) {
    invalid(
        "threads",
        "expected an integer from 0 to 1024 (0 = this rank's share of the hardware threads), got " +
            shown(*it));
  }
  return static_cast<unsigned>(it->get<int64_t>());
}

}  // namespace

PrecisionConfig parse_precision_config(std::string_view json_text) {
  const json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) invalid("config", "not valid JSON");
  if (!root.is_object()) invalid("config", "expected a JSON object, got " + shown(root));
  for (const auto& item : root.items()) {
    const std::string& k = item.key();
    if (k != "fp16" && k != "bf16" && k != "dtype" && k != "threads") {
      invalid(k, "unknown key in the precision config; expected fp16, bf16, dtype, threads");
    }
  }
  const Block fp16 = block(root, "fp16"), bf16 = block(root, "bf16");
  const std::optional<bool> fp16_flag = fp16.flag("enabled"), bf16_flag = bf16.flag("enabled");
  if (fp16_flag == true && bf16_flag == true) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
              "fp16.enabled and bf16.enabled are both true; choose one");
  }
  PrecisionConfig config;
  config.model_dtype = fp16_flag == true   ? STRATA_F16
                       : bf16_flag == true ? STRATA_BF16
                                           : STRATA_F32;
  if (const std::optional<strata_dtype> named = read_dtype(root)) {
    // The blocks may stay silent or agree; an explicit `enabled` saying otherwise is a conflict.
    const auto conflict = [&](const char* key, bool value) {
      invalid("dtype",
              shown(root["dtype"]) + " contradicts " + key + " = " + (value ? "true" : "false"));
    };
    if (fp16_flag.has_value() && *fp16_flag != (*named == STRATA_F16))
      conflict("fp16.enabled", *fp16_flag);
    if (bf16_flag.has_value() && *bf16_flag != (*named == STRATA_BF16))
      conflict("bf16.enabled", *bf16_flag);
    config.model_dtype = *named;
  }
  read_fp16(fp16, config.model_dtype == STRATA_F16, config);
  read_bf16(bf16, config.model_dtype == STRATA_BF16, config);
  config.threads = read_threads(root);
  return config;
}

}  // namespace strata::amp
