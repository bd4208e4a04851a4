// make_lr_schedule: a manifest's "scheduler" block read with DeepSpeed's names and defaults (the
// keyword arguments of the scheduler classes in deepspeed/runtime/lr_schedules.py, which
// DeepSpeed's engine passes as scheduler(optimizer, **params)), checked strictly: unknown keys,
// wrong types and values DeepSpeed rejects are errors naming the manifest and the JSON path.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

#include "error.hpp"
#include "manifest/key_suggestion.hpp"
#include "manifest/manifest_detail.hpp"
#include "schedule/lr_schedule.hpp"
#include "schedule/lr_schedule_detail.hpp"

namespace strata::rt {
namespace {

using manifest_detail::fail;
using manifest_detail::shortened;
using manifest_detail::shown;
using nlohmann::json;
using namespace schedule_detail;

constexpr std::array<std::string_view, 5> kTypes = {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR",
                                                    "OneCycle", "LRRangeTest"};
constexpr std::string_view kTypeList =
    "WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest";

// Each type's keyword arguments, in DeepSpeed's order (last_batch_iteration, which every type
// takes, is handled apart).
constexpr std::array<std::string_view, 4> kWarmupLrKeys = {"warmup_min_lr", "warmup_max_lr",
                                                           "warmup_num_steps", "warmup_type"};
constexpr std::array<std::string_view, 5> kWarmupDecayLrKeys = {
    "total_num_steps", "warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type"};
constexpr std::array<std::string_view, 5> kWarmupCosineLrKeys = {
    "total_num_steps", "warmup_min_ratio", "warmup_num_steps", "cos_min_ratio", "warmup_type"};
constexpr std::array<std::string_view, 12> kOneCycleKeys = {"cycle_min_lr",
                                                            "cycle_max_lr",
                                                            "decay_lr_rate",
                                                            "cycle_first_step_size",
                                                            "cycle_second_step_size",
                                                            "cycle_first_stair_count",
                                                            "cycle_second_stair_count",
                                                            "decay_step_size",
                                                            "cycle_momentum",
                                                            "cycle_min_mom",
                                                            "cycle_max_mom",
                                                            "decay_mom_rate"};
constexpr std::array<std::string_view, 4> kLrRangeTestKeys = {
    "lr_range_test_min_lr", "lr_range_test_step_size", "lr_range_test_step_rate",
    "lr_range_test_staircase"};

std::span<const std::string_view> keys_of(std::string_view type) {
  if (type == "WarmupLR") return kWarmupLrKeys;
  if (type == "WarmupDecayLR") return kWarmupDecayLrKeys;
  if (type == "WarmupCosineLR") return kWarmupCosineLrKeys;
  if (type == "OneCycle") return kOneCycleKeys;
  return kLrRangeTestKeys;
}

std::string join(std::span<const std::string_view> items) {
  std::string out;
  for (std::string_view item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

// The params object of one type, read key by key with DeepSpeed's defaults.
class ParamsReader {
 public:
  ParamsReader(const json& params, const std::string& source, std::string_view type)
      : params_(params), source_(source), type_(type) {}

  // "job.json: scheduler.params.<key>: "
  std::string at(std::string_view key) const {
    return source_ + ": scheduler.params." + shortened(std::string(key), 64) + ": ";
  }

  // Every key must be one of the type's keyword arguments; last_batch_iteration only -1.
  void check_keys() const {
    const std::span<const std::string_view> known = keys_of(type_);
    for (const auto& [key, value] : params_.items()) {
      if (key == "last_batch_iteration") {
        if (!(value.is_number_integer() && value.get<int64_t>() == -1)) {
          fail(at(key) + "only -1 (start from the beginning) is supported, got " + shown(value) +
               "; Strata keeps the schedule's position in the checkpoint");
        }
        continue;
      }
      bool found = false;
      for (std::string_view k : known) found = found || k == key;
      if (found) continue;
      std::string message = at(key) + "unknown " + std::string(type_) +
                            " parameter (known: " + join(known) + ")" + did_you_mean(key, known);
      std::string owners;  // the other types that take this key
      for (std::string_view other : kTypes) {
        if (other == type_) continue;
        for (std::string_view k : keys_of(other)) {
          if (k == key) owners += (owners.empty() ? "" : ", ") + std::string(other);
        }
      }
      if (!owners.empty()) message += "; it is a parameter of " + owners;
      fail(message);
    }
  }

  const json* find(std::string_view key) const {
    auto it = params_.find(std::string(key));
    return it == params_.end() ? nullptr : &*it;
  }

  // A float argument. DeepSpeed also takes a list with one value per parameter group for some
  // (its _format_param); with one group that is a list of one number.
  double number(std::string_view key, double fallback, bool per_group = false) const {
    const json* v = find(key);
    if (v == nullptr) return fallback;
    return number_value(key, *v, per_group);
  }
  double number_value(std::string_view key, const json& v, bool per_group) const {
    if (v.is_number()) return v.get<double>();
    if (per_group && v.is_array() && v.size() == 1 && v[0].is_number()) return v[0].get<double>();
    fail(at(key) +
         (per_group ? "expected a number (or a list of one number: Strata has one "
                      "parameter group), got "
                    : "expected a number, got ") +
         shown(v));
  }
  double required_number(std::string_view key, bool per_group = false) const {
    const json* v = find(key);
    if (v == nullptr)
      fail(at(key) + "required by " + std::string(type_) + " (DeepSpeed has no default)");
    return number_value(key, *v, per_group);
  }

  // An int argument; `minimum` is what DeepSpeed (or sense) requires, named in the message.
  int64_t integer(std::string_view key, int64_t fallback, std::optional<int64_t> minimum) const {
    const json* v = find(key);
    if (v == nullptr) return fallback;
    return integer_value(key, *v, minimum);
  }
  int64_t integer_value(std::string_view key, const json& v, std::optional<int64_t> minimum) const {
    const char* expected = !minimum        ? "an integer"
                           : *minimum == 1 ? "a positive integer"
                           : *minimum == 0 ? "a non-negative integer"
                                           : "an integer";
    const bool in_range =
        v.is_number_integer() &&
        (!v.is_number_unsigned() ||
         v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
    if (!in_range || (minimum && v.get<int64_t>() < *minimum)) {
      fail(at(key) + "expected " + expected + ", got " + shown(v));
    }
    return v.get<int64_t>();
  }
  int64_t required_integer(std::string_view key, std::optional<int64_t> minimum) const {
    const json* v = find(key);
    if (v == nullptr)
      fail(at(key) + "required by " + std::string(type_) + " (DeepSpeed has no default)");
    return integer_value(key, *v, minimum);
  }

  bool boolean(std::string_view key, bool fallback) const {
    const json* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) fail(at(key) + "expected true or false, got " + shown(*v));
    return v->get<bool>();
  }

  // warmup_type: "log" or "linear". DeepSpeed falls back to "log" with a warning for any other
  // string; Strata refuses it, as it refuses every misspelt setting.
  WarmupType warmup_type() const {
    const json* v = find("warmup_type");
    if (v == nullptr) return WarmupType::Log;
    if (v->is_string()) {
      const std::string s = v->get<std::string>();
      if (s == "log") return WarmupType::Log;
      if (s == "linear") return WarmupType::Linear;
    }
    static constexpr std::array<std::string_view, 2> kWarmupTypes = {"log", "linear"};
    fail(at("warmup_type") + "expected \"log\" or \"linear\", got " + shown(*v) +
         (v->is_string() ? did_you_mean(v->get<std::string>(), kWarmupTypes) : std::string()));
  }

 private:
  const json& params_;
  const std::string& source_;
  std::string_view type_;
};

// warmup_num_steps: a positive int (DeepSpeed raises ValueError otherwise), then max(2, n).
int64_t warmup_num_steps(const ParamsReader& r) {
  return std::max<int64_t>(2, r.integer("warmup_num_steps", 1000, 1));
}

WarmupLrParams warmup_lr_params(const ParamsReader& r, double default_max_lr,
                                OptimizerDefaults defaults, const std::string& source,
                                std::string_view type) {
  WarmupLrParams p{};
  p.min_lr = r.number("warmup_min_lr", 0.0, true);
  // warmup_max_lr: WarmupLR's default is None, the optimizer's lr; WarmupDecayLR passes its own
  // default 0.001 up, so only an explicit null takes the optimizer's lr there.
  const json* max_lr = r.find("warmup_max_lr");
  const bool use_optimizer_lr =
      (max_lr == nullptr && std::isnan(default_max_lr)) || (max_lr != nullptr && max_lr->is_null());
  if (use_optimizer_lr) {
    if (std::isnan(defaults.lr)) {
      fail(source + ": scheduler.params.warmup_max_lr: " + std::string(type) +
           " takes the optimizer's lr when warmup_max_lr is absent or null, and the optimizer has "
           "none; set warmup_max_lr");
    }
    p.max_lr = defaults.lr;
  } else {
    p.max_lr = max_lr == nullptr ? default_max_lr : r.number_value("warmup_max_lr", *max_lr, true);
  }
  p.warmup_num_steps = warmup_num_steps(r);
  p.warmup_type = r.warmup_type();
  return p;
}

std::unique_ptr<LrSchedule> parse_warmup_cosine(const ParamsReader& r, OptimizerDefaults defaults,
                                                const std::string& source) {
  WarmupCosineLrParams p{};
  p.total_num_steps = r.required_integer("total_num_steps", 0);
  p.warmup_min_ratio = r.number("warmup_min_ratio", 0.0);
  p.warmup_num_steps = warmup_num_steps(r);
  p.cos_min_ratio = r.number("cos_min_ratio", 0.0001);
  p.warmup_type = r.warmup_type();
  // org_lrs: the optimizer's own lr, which the ratios scale.
  if (std::isnan(defaults.lr)) {
    fail(source +
         ": scheduler: WarmupCosineLR scales the optimizer's lr, and the optimizer has none");
  }
  p.org_lr = defaults.lr;
  return make_warmup_cosine_lr(p);
}

std::unique_ptr<LrSchedule> parse_one_cycle(const ParamsReader& r, OptimizerDefaults defaults) {
  OneCycleParams p{};
  p.min_lr = r.required_number("cycle_min_lr", true);
  p.max_lr = r.required_number("cycle_max_lr", true);
  p.decay_lr_rate = r.number("decay_lr_rate", 0.0);
  // _initialize_cycle: float(cycle_first_step_size) > 0; cycle_second_step_size None (or absent)
  // means cycle_first_step_size, else float(...) >= 0.
  p.first_step_size = r.number("cycle_first_step_size", 2000);
  if (!(p.first_step_size > 0)) {
    fail(r.at("cycle_first_step_size") + "expected a positive number, got " +
         shown(*r.find("cycle_first_step_size")));
  }
  const json* second = r.find("cycle_second_step_size");
  p.second_step_size = (second == nullptr || second->is_null())
                           ? p.first_step_size
                           : r.number_value("cycle_second_step_size", *second, false);
  if (p.second_step_size < 0) {
    fail(r.at("cycle_second_step_size") + "expected a non-negative number, got " + shown(*second));
  }
  // Stair counts: 0 (or below) keeps the half cycle continuous; the second defaults to the first.
  p.first_stair_count = r.integer("cycle_first_stair_count", 0, std::nullopt);
  const json* second_stairs = r.find("cycle_second_stair_count");
  p.second_stair_count =
      (second_stairs == nullptr || second_stairs->is_null())
          ? p.first_stair_count
          : r.integer_value("cycle_second_stair_count", *second_stairs, std::nullopt);
  p.decay_step_size = r.number("decay_step_size", 0);
  if (p.decay_step_size < 0) {
    fail(r.at("decay_step_size") + "expected a non-negative number (0: no decay), got " +
         shown(*r.find("decay_step_size")));
  }
  // skip_lr_decay / skip_mom_decay: math.isclose(x, 0) holds only for 0 itself.
  p.skip_lr_decay = p.decay_step_size == 0 || p.decay_lr_rate == 0;
  // cycle_momentum (default True) is dropped, as DeepSpeed drops it for an optimizer without
  // betas, when the optimizer has no momentum.
  p.cycle_momentum = r.boolean("cycle_momentum", true) && !std::isnan(defaults.momentum);
  p.min_mom = r.number("cycle_min_mom", 0.8, true);
  p.max_mom = r.number("cycle_max_mom", 0.9, true);
  p.decay_mom_rate = r.number("decay_mom_rate", 0.0);
  p.skip_mom_decay = p.decay_step_size == 0 || p.decay_mom_rate == 0;
  return make_one_cycle(p);
}

std::unique_ptr<LrSchedule> parse_lr_range_test(const ParamsReader& r) {
  LrRangeTestParams p{};
  p.min_lr = r.number("lr_range_test_min_lr", 1e-3, true);
  // lr_range_test_step_size: a positive int (DeepSpeed raises ValueError otherwise).
  p.step_size = r.integer("lr_range_test_step_size", 2000, 1);
  p.step_rate = r.number("lr_range_test_step_rate", 1.0);
  p.staircase = r.boolean("lr_range_test_staircase", false);
  return make_lr_range_test(p);
}

}  // namespace

std::unique_ptr<LrSchedule> make_lr_schedule(const json& block, const std::string& source,
                                             OptimizerDefaults defaults) {
  if (!block.is_object()) {
    fail(source + ": scheduler: expected an object with \"type\" and \"params\", got " +
         shown(block));
  }
  static constexpr std::array<std::string_view, 2> kBlockKeys = {"type", "params"};
  for (const auto& [key, value] : block.items()) {
    if (key != "type" && key != "params") {
      fail(source + ": scheduler." + shortened(key, 64) +
           ": unknown key (expected type or params)" + did_you_mean(key, kBlockKeys));
    }
  }
  auto type_it = block.find("type");
  if (type_it == block.end()) {
    fail(source + ": scheduler: missing \"type\" (one of " + std::string(kTypeList) + ")");
  }
  if (!type_it->is_string()) {
    fail(source + ": scheduler.type: expected a string (one of " + std::string(kTypeList) +
         "), got " + shown(*type_it));
  }
  const std::string type = type_it->get<std::string>();
  bool known = false;
  for (std::string_view t : kTypes) known = known || t == type;
  if (!known) {
    fail(source + ": scheduler.type: unknown scheduler type " + shown(*type_it) +
         " (expected one of " + std::string(kTypeList) + ")" + did_you_mean(type, kTypes));
  }

  static const json kNoParams = json::object();
  auto params_it = block.find("params");
  const json& params = (params_it == block.end() || params_it->is_null()) ? kNoParams : *params_it;
  if (!params.is_object()) {
    fail(source + ": scheduler.params: expected an object, got " + shown(params));
  }
  const ParamsReader r(params, source, type);
  r.check_keys();

  if (type == "WarmupLR") {
    return make_warmup_lr(
        warmup_lr_params(r, std::numeric_limits<double>::quiet_NaN(), defaults, source, type));
  }
  if (type == "WarmupDecayLR") {
    WarmupDecayLrParams p{};
    p.total_num_steps = r.required_integer("total_num_steps", 0);
    p.warmup = warmup_lr_params(r, 0.001, defaults, source, type);
    return make_warmup_decay_lr(p);
  }
  if (type == "WarmupCosineLR") return parse_warmup_cosine(r, defaults, source);
  if (type == "OneCycle") return parse_one_cycle(r, defaults);
  return parse_lr_range_test(r);
}

}  // namespace strata::rt
