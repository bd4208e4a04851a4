#include "manifest/manifest_keys.hpp"

#include "manifest/key_suggestion.hpp"
#include "log.hpp"
#include "manifest/manifest_detail.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace strata::rt {
namespace {

using nlohmann::json;
using manifest_detail::fail;
using manifest_detail::pointer;
using manifest_detail::shortened;
using manifest_detail::shown;

enum class Expect { PositiveInteger, NonNegativeNumber, PositiveNumber, Boolean, Object, String };

// What Strata does with a DeepSpeed key: acts on it (here or in a default plugin), ignores it, or
// will act on it once a later version implements it. Either of the last two is said aloud.
enum class Effect { Acts, Ignored, NotYet };

struct KeyRule {
  std::string_view key;
  Expect expect;
  Effect effect;
  std::string_view note;  // for Ignored and NotYet: what the user gets instead
};

// Keys of a ds_config (deepspeed/runtime/config.py). Those Strata uses are checked for type here
// so that the message names the file; the rest are accepted for ds_config parity, with a warning.
constexpr std::array<KeyRule, 54> kDeepSpeedKeys{{
    {"train_batch_size", Expect::PositiveInteger, Effect::Acts, ""},
    {"train_micro_batch_size_per_gpu", Expect::PositiveInteger, Effect::Acts, ""},
    {"gradient_accumulation_steps", Expect::PositiveInteger, Effect::Acts, ""},
    {"gradient_clipping", Expect::NonNegativeNumber, Effect::Acts, ""},
    {"optimizer", Expect::Object, Effect::Acts, ""},
    {"zero_optimization", Expect::Object, Effect::Acts, ""},
    {"fp16", Expect::Object, Effect::Acts, ""},
    {"bf16", Expect::Object, Effect::Acts, ""},
    {"bfloat16", Expect::Object, Effect::Acts, ""},  // DeepSpeed's alias of bf16
    {"scheduler", Expect::Object, Effect::Acts, ""},
    {"checkpoint", Expect::Object, Effect::Acts, ""},  // checkpoint_policy.cpp
    {"amp", Expect::Object, Effect::Ignored, "there is no NVIDIA Apex here; use fp16 or bf16"},
    {"steps_per_print", Expect::PositiveInteger, Effect::Acts, ""},  // with wall_clock_breakdown
    {"wall_clock_breakdown", Expect::Boolean, Effect::Acts, ""},
    {"memory_breakdown", Expect::Boolean, Effect::Ignored, "no memory report is printed"},
    {"dump_state", Expect::Boolean, Effect::Ignored, "the configuration is not printed"},
    {"prescale_gradients", Expect::Boolean, Effect::Ignored,
     "gradients are averaged in fp32 after the reduction"},
    {"gradient_predivide_factor", Expect::PositiveNumber, Effect::Ignored,
     "gradients are averaged in fp32 after the reduction"},
    {"sparse_gradients", Expect::Boolean, Effect::Ignored, "gradients are reduced dense"},
    {"zero_allow_untested_optimizer", Expect::Boolean, Effect::Ignored,
     "every optimizer of the offload stratum works at every ZeRO stage"},
    {"zero_force_ds_cpu_optimizer", Expect::Boolean, Effect::Ignored,
     "the offload stratum's optimizer always runs on the CPU"},
    {"communication_data_type", Expect::String, Effect::Acts, ""},  // the sharding stratum's
    {"seq_parallel_communication_data_type", Expect::String, Effect::Ignored, "there is no sequence parallelism"},
    {"sequence_parallel_size", Expect::PositiveInteger, Effect::Ignored, "there is no sequence parallelism"},
    {"disable_allgather", Expect::Boolean, Effect::Ignored, "the sharding stratum decides its collectives"},
    {"activation_checkpointing", Expect::Object, Effect::Ignored, "recomputation is the host's business"},
    {"flops_profiler", Expect::Object, Effect::Ignored, "there is no profiler"},
    {"tensorboard", Expect::Object, Effect::Ignored, "no monitor output is written"},
    {"wandb", Expect::Object, Effect::Ignored, "no monitor output is written"},
    {"csv_monitor", Expect::Object, Effect::Ignored, "no monitor output is written"},
    {"comet", Expect::Object, Effect::Ignored, "no monitor output is written"},
    {"comms_logger", Expect::Object, Effect::Ignored, "collectives are not logged"},
    {"data_types", Expect::Object, Effect::Ignored, "gradients accumulate in the dtype the host registers"},
    {"aio", Expect::Object, Effect::Ignored, "NVMe offload takes its I/O settings from offload_optimizer"},
    {"elasticity", Expect::Object, Effect::Acts, ""},  // elastic/batch_rules.hpp
    {"autotuning", Expect::Object, Effect::Ignored, "there is no autotuner"},
    {"data_efficiency", Expect::Object, Effect::Ignored, "data sampling is the host's business"},
    {"curriculum_learning", Expect::Object, Effect::Ignored, "data sampling is the host's business"},
    {"dataloader_drop_last", Expect::Boolean, Effect::Ignored, "data loading is the host's business"},
    {"use_data_before_expert_parallelism", Expect::Boolean, Effect::Ignored, "there is no expert parallelism"},
    {"compression_training", Expect::Object, Effect::Ignored, "there is no model compression"},
    {"quantize_training", Expect::Object, Effect::Ignored, "there is no quantization"},
    {"weight_quantization", Expect::Object, Effect::Ignored, "there is no quantization"},
    {"sparse_attention", Expect::Object, Effect::Ignored, "the model is the host's business"},
    {"progressive_layer_drop", Expect::Object, Effect::Ignored, "the model is the host's business"},
    {"pipeline", Expect::Object, Effect::Ignored, "there is no pipeline parallelism"},
    {"eigenvalue", Expect::Object, Effect::Ignored, "there is no eigenvalue computation"},
    {"hybrid_engine", Expect::Object, Effect::Ignored, "there is no inference engine"},
    {"compile", Expect::Object, Effect::Ignored, "the host compiles its own model"},
    {"torch_autocast", Expect::Object, Effect::Ignored, "the host casts its own inputs"},
    {"graph_harvesting", Expect::Boolean, Effect::Ignored, "there are no CUDA graphs"},
    {"nebula", Expect::Object, Effect::Ignored, "no checkpoint is written"},
    {"timers", Expect::Object, Effect::Ignored,
     "strata_step_result has the step's time split; wall_clock_breakdown logs it"},
    {"tensor_parallel", Expect::Object, Effect::Ignored, "there is no tensor parallelism"},
}};

// Strata's own top-level keys: the four strata sections (read by manifest.cpp) and the run's limits.
constexpr std::array<std::string_view, 8> kStrataKeys{
    "comm",           "sharding",        "precision", "offload",
    "stall_inspector", "max_consecutive_skips", "timeline", "join"};

bool matches(const json& v, Expect expect) {
  switch (expect) {
    case Expect::PositiveInteger:
      return (v.is_number_unsigned() && v.get<uint64_t>() > 0) ||
             (v.is_number_integer() && v.get<int64_t>() > 0);
    case Expect::NonNegativeNumber: return v.is_number() && v.get<double>() >= 0.0;
    case Expect::PositiveNumber: return v.is_number() && v.get<double>() > 0.0;
    case Expect::Boolean: return v.is_boolean();
    case Expect::Object: return v.is_object();
    case Expect::String: return v.is_string();
  }
  return false;
}

const char* describe(Expect expect) {
  switch (expect) {
    case Expect::PositiveInteger: return "a positive integer";
    case Expect::NonNegativeNumber: return "a number >= 0";
    case Expect::PositiveNumber: return "a number > 0";
    case Expect::Boolean: return "true or false";
    case Expect::Object: return "an object";
    case Expect::String: return "a string";
  }
  return "?";
}

const KeyRule* find_rule(const std::string& key) {
  auto it = std::find_if(kDeepSpeedKeys.begin(), kDeepSpeedKeys.end(),
                         [&](const KeyRule& r) { return r.key == key; });
  return it == kDeepSpeedKeys.end() ? nullptr : &*it;
}

bool is_strata_key(const std::string& key) {
  return std::find(kStrataKeys.begin(), kStrataKeys.end(), key) != kStrataKeys.end();
}

std::vector<std::string_view> known_keys() {
  std::vector<std::string_view> keys(kStrataKeys.begin(), kStrataKeys.end());
  for (const KeyRule& rule : kDeepSpeedKeys) keys.push_back(rule.key);
  return keys;
}

// DeepSpeed's "off": false, or a block with "enabled": false. Saying that an unused feature is
// ignored when it is switched off anyway would only be noise.
bool switched_off(const json& value) {
  if (value.is_boolean()) return !value.get<bool>();
  if (value.is_object()) {
    auto it = value.find("enabled");
    return it != value.end() && it->is_boolean() && !it->get<bool>();
  }
  return false;
}

void warn_unused(const KeyRule& rule, const json& value, const std::string& source) {
  if (rule.effect == Effect::Acts) return;
  const std::string at = source + ": " + pointer("", std::string(rule.key));
  if (rule.effect == Effect::NotYet) {
    logger().warn("{}: not implemented yet: ignored ({})", at, rule.note);
  } else if (!switched_off(value)) {
    logger().warn("{}: ignored: Strata does not act on this DeepSpeed key ({})", at, rule.note);
  }
}

// ---- stall_inspector ---------------------------------------------------------------------------

// One of the two stall settings, with where its value came from for messages.
struct Seconds {
  double value;
  std::string text;    // as written
  std::string origin;  // "/stall_inspector/warning_seconds", "STRATA_STALL_WARNING_SECONDS", "the default"
};

// Larger values would overflow a nanosecond clock (about 292 years); no stall needs them.
constexpr double kMaxSeconds = 1e9;

std::string seconds_expected(bool shutdown) {
  return std::string("a number of seconds from 0 to 1e9 (0 = ") +
         (shutdown ? "never end the job" : "no warning") + ")";
}

void read_seconds_key(const json& section, const char* key, bool shutdown, Seconds& out,
                      const std::string& source) {
  auto it = section.find(key);
  if (it == section.end() || it->is_null()) return;
  const std::string path = pointer("/stall_inspector", key);
  if (!it->is_number() || !(it->get<double>() >= 0.0 && it->get<double>() <= kMaxSeconds)) {
    fail(source + ": " + path + ": expected " + seconds_expected(shutdown) + ", got " + shown(*it));
  }
  out = Seconds{it->get<double>(), it->dump(), path};
}

// The environment wins over the manifest, so one run can change a limit without editing it.
void read_seconds_env(const char* name, bool shutdown, Seconds& out, const std::string& source) {
  const char* env = std::getenv(name);
  if (env == nullptr) return;
  const std::string text = env;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  const bool whole = !text.empty() && end == text.c_str() + text.size();
  if (!whole || !(value >= 0.0 && value <= kMaxSeconds)) {
    fail(source + ": environment variable " + name + ": expected " + seconds_expected(shutdown) +
         ", got \"" + shortened(text, 40) + "\"");
  }
  out = Seconds{value, text, name};
}

void read_stall_inspector(Manifest& m) {
  Seconds warning{m.stall_warning_seconds, "60", "the default"};
  Seconds shutdown{m.stall_shutdown_seconds, "300", "the default"};
  if (auto it = m.json.find("stall_inspector"); it != m.json.end() && !it->is_null()) {
    if (!it->is_object()) {
      fail(m.source + ": /stall_inspector: expected an object with warning_seconds and " +
           "shutdown_seconds, got " + shown(*it));
    }
    static constexpr std::array<std::string_view, 2> kKeys{"warning_seconds", "shutdown_seconds"};
    for (const auto& [key, value] : it->items()) {
      if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
        fail(m.source + ": " + pointer("/stall_inspector", key) +
             ": unknown key (expected warning_seconds or shutdown_seconds)" + did_you_mean(key, kKeys));
      }
    }
    read_seconds_key(*it, "warning_seconds", false, warning, m.source);
    read_seconds_key(*it, "shutdown_seconds", true, shutdown, m.source);
  }
  read_seconds_env("STRATA_STALL_WARNING_SECONDS", false, warning, m.source);
  read_seconds_env("STRATA_STALL_SHUTDOWN_SECONDS", true, shutdown, m.source);
  if (warning.value > 0 && shutdown.value > 0 && shutdown.value < warning.value) {
    fail(m.source + ": /stall_inspector: shutdown_seconds " + shutdown.text + " (" + shutdown.origin +
         ") is less than warning_seconds " + warning.text + " (" + warning.origin +
         "); a stalled job is warned about before it is ended: make shutdown_seconds >= "
         "warning_seconds, or 0 to never end the job");
  }
  m.stall_warning_seconds = warning.value;
  m.stall_shutdown_seconds = shutdown.value;
}

// ---- timeline and wall_clock_breakdown ---------------------------------------------------------

// The environment wins over the manifest, as for the stall inspector. Whether the path can be
// written is checked where the file is opened (timeline.cpp), naming the same origin.
void read_timing_keys(Manifest& m) {
  if (auto it = m.json.find("timeline"); it != m.json.end() && !it->is_null()) {
    if (!it->is_string() || it->get<std::string>().empty()) {
      fail(m.source + ": /timeline: expected the path of the Chrome trace JSON to write (a "
           "non-empty string), got " + shown(*it));
    }
    m.timeline_path = it->get<std::string>();
    m.timeline_origin = "/timeline";
  }
  if (const char* env = std::getenv("STRATA_TIMELINE"); env != nullptr && *env != '\0') {
    m.timeline_path = env;
    m.timeline_origin = "STRATA_TIMELINE";
  }
  // Both were type-checked by validate_top_level.
  if (auto it = m.json.find("wall_clock_breakdown"); it != m.json.end() && it->is_boolean()) {
    m.wall_clock_breakdown = it->get<bool>();
  }
  if (auto it = m.json.find("steps_per_print"); it != m.json.end() && !it->is_null()) {
    m.steps_per_print = it->get<uint64_t>();
  }
}

}  // namespace

void validate_top_level(const json& doc, const std::string& source) {
  static const std::vector<std::string_view> known = known_keys();
  for (const auto& [key, value] : doc.items()) {
    if (is_strata_key(key)) continue;
    if (const KeyRule* rule = find_rule(key)) {
      if (value.is_null()) continue;
      if (!matches(value, rule->expect)) {
        fail(source + ": " + pointer("", key) + ": expected " + describe(rule->expect) + ", got " +
             shown(value));
      }
      warn_unused(*rule, value, source);
    } else if (value.is_object() && value.contains("library")) {
      fail(source + ": " + pointer("", key) + ": unknown stratum '" + shortened(key, 64) +
           "' (expected comm, sharding, precision or offload)");
    } else {
      const std::string suggestion = did_you_mean(key, known);
      fail(source + ": " + pointer("", key) + ": unknown key" +
           (suggestion.empty() ? " (neither DeepSpeed nor Strata defines it)" : suggestion));
    }
  }
}

void read_runtime_keys(Manifest& m) {
  read_stall_inspector(m);
  if (auto it = m.json.find("max_consecutive_skips"); it != m.json.end() && !it->is_null()) {
    if (!matches(*it, Expect::PositiveInteger)) {
      fail(m.source + ": /max_consecutive_skips: expected a positive integer (non-finite steps in a "
           "row, with no loss scale left to lower, before the run ends), got " + shown(*it));
    }
    m.max_consecutive_skips = it->get<uint64_t>();
  }
  if (auto it = m.json.find("join"); it != m.json.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      fail(m.source + ": /join: expected true or false (whether a rank that runs out of data may "
           "call strata_join), got " + shown(*it));
    }
    m.join = it->get<bool>();
  }
  read_timing_keys(m);
  read_checkpoint_policy(m);
}

}  // namespace strata::rt
