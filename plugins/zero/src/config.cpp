#include "config.hpp"

#include <strata/plugin.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <optional>
#include <string_view>

namespace strata::zero {
namespace {

using nlohmann::json;
using sdk::fail;

// What a DeepSpeed key's value must be (mirrors the field types of DeepSpeedZeroConfig).
enum class Kind {
  kStage,         // integer 0..3
  kPositiveInt,   // reduce_bucket_size: DeepSpeed allows 0, but a 0-element bucket reduces nothing
  kNonNegInt,     // pydantic Field(ge=0)
  kInt,           // any integer
  kBool,
  kOptionalBool,  // bool or null
  kOptionalObject,
  kObject,
};

// From which stage a key has an effect. Keys for PyTorch/GPU-only features (module hooks,
// ZeRO++ quantisation, MiCS, ZenFlow) have none in a host runtime: kNever.
constexpr int kAlways = 0, kStage1 = 1, kStage2 = 2, kStage3 = 3, kNever = 4;
// offload_optimizer/offload_param configure the offload stratum, which validates them.
constexpr int kOtherStratum = -1;

struct KeySpec {
  std::string_view name;
  Kind kind;
  int effective_from;  // a stage, kNever or kOtherStratum
  bool deprecated = false;
};

// Every key DeepSpeed's zero_optimization accepts (deepspeed/runtime/zero/config.py). Its config
// model forbids extra keys, so anything else is an error here too. The stage3_ names are aliases
// of the bare names; DeepSpeed accepts either.
constexpr KeySpec kKeys[] = {
    {"stage", Kind::kStage, kAlways},
    {"reduce_bucket_size", Kind::kPositiveInt, kAlways},
    {"offload_optimizer", Kind::kOptionalObject, kOtherStratum},
    {"offload_param", Kind::kOptionalObject, kOtherStratum},
    {"contiguous_gradients", Kind::kBool, kStage1},
    {"reduce_scatter", Kind::kBool, kStage1},
    {"use_multi_rank_bucket_allreduce", Kind::kBool, kStage1},
    {"allgather_partitions", Kind::kBool, kStage1},
    {"allgather_bucket_size", Kind::kNonNegInt, kStage1},
    {"overlap_comm", Kind::kOptionalBool, kStage1},
    {"load_from_fp32_weights", Kind::kBool, kStage1},
    {"elastic_checkpoint", Kind::kBool, kStage1},
    {"zenflow", Kind::kOptionalObject, kNever},
    {"sub_group_size", Kind::kNonNegInt, kStage3},
    {"prefetch_bucket_size", Kind::kNonNegInt, kStage3},
    {"stage3_prefetch_bucket_size", Kind::kNonNegInt, kStage3},
    {"param_persistence_threshold", Kind::kNonNegInt, kStage3},
    {"stage3_param_persistence_threshold", Kind::kNonNegInt, kStage3},
    {"model_persistence_threshold", Kind::kNonNegInt, kStage3},
    {"stage3_model_persistence_threshold", Kind::kNonNegInt, kStage3},
    {"max_live_parameters", Kind::kNonNegInt, kStage3},
    {"stage3_max_live_parameters", Kind::kNonNegInt, kStage3},
    {"max_reuse_distance", Kind::kNonNegInt, kStage3},
    {"stage3_max_reuse_distance", Kind::kNonNegInt, kStage3},
    {"gather_16bit_weights_on_model_save", Kind::kBool, kStage3},
    {"stage3_gather_16bit_weights_on_model_save", Kind::kBool, kStage3},
    {"module_granularity_threshold", Kind::kInt, kStage3},
    {"stage3_module_granularity_threshold", Kind::kInt, kStage3},
    {"use_all_reduce_for_fetch_params", Kind::kBool, kStage3},
    {"stage3_use_all_reduce_for_fetch_params", Kind::kBool, kStage3},
    {"allgather_sequential", Kind::kBool, kStage3},
    {"stage3_allgather_sequential", Kind::kBool, kStage3},
    {"partition_stream_chunk_size", Kind::kNonNegInt, kStage3},
    {"stage3_partition_stream_chunk_size", Kind::kNonNegInt, kStage3},
    {"ignore_unused_parameters", Kind::kBool, kStage2},
    {"legacy_stage1", Kind::kBool, kStage1},
    {"round_robin_gradients", Kind::kBool, kStage1},
    {"zero_hpz_partition_size", Kind::kNonNegInt, kNever},
    {"zero_quantized_weights", Kind::kBool, kNever},
    {"zero_quantized_nontrainable_weights", Kind::kBool, kNever},
    {"zero_quantized_gradients", Kind::kBool, kNever},
    {"zeropp_loco_param", Kind::kOptionalObject, kNever},
    {"mics_shard_size", Kind::kInt, kNever},
    {"mics_hierarchical_params_gather", Kind::kBool, kNever},
    {"memory_efficient_linear", Kind::kBool, kNever},
    {"pipeline_loading_checkpoint", Kind::kBool, kNever},
    {"override_module_apply", Kind::kBool, kNever},
    {"log_trace_cache_warnings", Kind::kBool, kNever},
    {"enable_sanity_checks", Kind::kBool, kNever},
    {"save_muon_momentum_buffer_in_memory", Kind::kBool, kNever},
    {"leaf_module", Kind::kObject, kNever},
    {"cpu_offload", Kind::kOptionalBool, kNever, true},
    {"cpu_offload_param", Kind::kOptionalBool, kNever, true},
    {"cpu_offload_use_pin_memory", Kind::kOptionalBool, kNever, true},
    {"stage3_gather_fp16_weights_on_model_save", Kind::kBool, kNever, true},
};

const KeySpec* find_key(std::string_view name) {
  for (const KeySpec& spec : kKeys) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

[[noreturn]] void bad_value(std::string_view key, std::string_view expected, const json& value) {
  fail(STRATA_ERR_INVALID_ARGUMENT, "zero_optimization." + std::string(key) + ": expected " +
                                        std::string(expected) + ", got " + value.dump());
}

// JSON integers, and numbers such as 5e8 that DeepSpeed configs write for integer keys (pydantic
// accepts a float with no fractional part for an int field).
std::optional<int64_t> as_integer(const json& value) {
  if (value.is_number_integer()) {
    if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{INT64_MAX}) {
      return std::nullopt;
    }
    return value.get<int64_t>();
  }
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.2e18) {
      return static_cast<int64_t>(d);
    }
  }
  return std::nullopt;
}

void check_type(const KeySpec& spec, const json& value) {
  switch (spec.kind) {
    case Kind::kStage: {
      const auto v = as_integer(value);
      if (!v || *v < 0 || *v > 3) bad_value(spec.name, "0, 1, 2 or 3", value);
      return;
    }
    case Kind::kPositiveInt: {
      const auto v = as_integer(value);
      if (!v || *v <= 0) bad_value(spec.name, "a positive integer", value);
      return;
    }
    case Kind::kNonNegInt: {
      const auto v = as_integer(value);
      if (!v || *v < 0) bad_value(spec.name, "a non-negative integer", value);
      return;
    }
    case Kind::kInt:
      if (!as_integer(value)) bad_value(spec.name, "an integer", value);
      return;
    case Kind::kBool:
      if (!value.is_boolean()) bad_value(spec.name, "true or false", value);
      return;
    case Kind::kOptionalBool:
      if (!value.is_boolean() && !value.is_null()) bad_value(spec.name, "true, false or null", value);
      return;
    case Kind::kOptionalObject:
      if (!value.is_object() && !value.is_null()) bad_value(spec.name, "an object or null", value);
      return;
    case Kind::kObject:
      if (!value.is_object()) bad_value(spec.name, "an object", value);
      return;
  }
}

json parse_object(const char* text) {
  json root;
  try {
    root = json::parse(text == nullptr || *text == '\0' ? "{}" : text);
  } catch (const json::parse_error& e) {
    fail(STRATA_ERR_INVALID_ARGUMENT, std::string("zero_optimization: invalid JSON: ") + e.what());
  }
  if (!root.is_object()) {
    fail(STRATA_ERR_INVALID_ARGUMENT,
         "zero_optimization: expected a JSON object, got " + root.dump());
  }
  return root;
}

}  // namespace

ZeroConfig parse_config(const char* text) {
  const json root = parse_object(text);
  ZeroConfig config;
  std::vector<const KeySpec*> given;
  for (const auto& [key, value] : root.items()) {
    const KeySpec* spec = find_key(key);
    if (spec == nullptr) {
      fail(STRATA_ERR_INVALID_ARGUMENT,
           "zero_optimization." + key + ": unknown key (DeepSpeed's zero_optimization has no such "
           "field and forbids extra keys)");
    }
    check_type(*spec, value);
    if (spec->name == "stage") config.stage = static_cast<int>(*as_integer(value));
    if (spec->name == "reduce_bucket_size") {
      config.reduce_bucket_size = static_cast<uint64_t>(*as_integer(value));
    }
    given.push_back(spec);
  }
  // Only now is the stage known (object keys come in name order, not as written).
  for (const KeySpec* spec : given) {
    if (spec->effective_from == kOtherStratum || spec->effective_from <= config.stage) continue;
    std::string entry(spec->name);
    if (spec->deprecated) entry += " (deprecated by DeepSpeed)";
    config.ignored_keys.push_back(std::move(entry));
  }
  return config;
}

}  // namespace strata::zero
