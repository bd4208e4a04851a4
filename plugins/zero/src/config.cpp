#include "config.hpp"

#include "config_keys.hpp"

#include <strata/plugin.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <optional>
#include <string_view>

namespace strata::zero {
namespace {

using nlohmann::json;
using sdk::fail;

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

// communication_data_type's dtype ("fp32", "fp16", "bf16"; DeepSpeed's spellings).
std::optional<int32_t> comm_dtype(const json& value) {
  if (!value.is_string()) return std::nullopt;
  const std::string name = value.get<std::string>();
  if (name == "fp32") return STRATA_F32;
  if (name == "fp16") return STRATA_F16;
  if (name == "bf16") return STRATA_BF16;
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
      if (!value.is_boolean() && !value.is_null())
        bad_value(spec.name, "true, false or null", value);
      return;
    case Kind::kOptionalObject:
      if (!value.is_object() && !value.is_null()) bad_value(spec.name, "an object or null", value);
      return;
    case Kind::kObject:
      if (!value.is_object()) bad_value(spec.name, "an object", value);
      return;
    case Kind::kCommDtype:
      if (!value.is_null() && !comm_dtype(value)) {
        bad_value(spec.name, "\"fp32\", \"fp16\", \"bf16\" or null", value);
      }
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

// Stores a type-checked value into the field it sets. null (overlap_comm) keeps the default.
void apply(ZeroConfig& config, Field field, const json& value) {
  const auto count = [&] { return static_cast<uint64_t>(*as_integer(value)); };
  switch (field) {
    case Field::kNone: return;
    case Field::kStage: config.stage = static_cast<int>(*as_integer(value)); return;
    case Field::kReduceBucketSize: config.reduce_bucket_size = count(); return;
    case Field::kAllgatherBucketSize: config.allgather_bucket_size = count(); return;
    case Field::kOverlapComm:
      if (value.is_boolean()) config.overlap_comm = value.get<bool>();
      return;
    case Field::kContiguousGradients: config.contiguous_gradients = value.get<bool>(); return;
    case Field::kPrefetchBucketSize: config.prefetch_bucket_size = count(); return;
    case Field::kPersistenceThreshold: config.param_persistence_threshold = count(); return;
    case Field::kMaxLiveParameters: config.max_live_parameters = count(); return;
    case Field::kCommunicationDataType:
      if (!value.is_null()) config.communication_dtype = *comm_dtype(value);
      return;
    case Field::kMaxReuseDistance: config.max_reuse_distance = count(); return;
  }
}

// Whether `spec` given as `value` changes nothing at `stage`, and how to say so.
std::optional<std::string> without_effect(const KeySpec& spec, const json& value, int stage) {
  if (spec.effective_from == kOtherStratum) return std::nullopt;
  std::string entry(spec.name);
  if (spec.effective_from > stage) {
    if (spec.deprecated) entry += " (deprecated by DeepSpeed)";
    return entry;
  }
  if (spec.when_false != nullptr && value.is_boolean() && !value.get<bool>()) {
    return entry + " (" + spec.when_false + ")";
  }
  return std::nullopt;
}

}  // namespace

ZeroConfig parse_config(const char* text) {
  const json root = parse_object(text);
  ZeroConfig config;
  std::map<Field, std::pair<std::string, json>> seen;  // first spelling of each aliased field
  std::vector<std::pair<const KeySpec*, const json*>> given;
  for (const auto& [key, value] : root.items()) {
    const KeySpec* spec = find_key(key);
    if (spec == nullptr) {
      fail(STRATA_ERR_INVALID_ARGUMENT,
           "zero_optimization." + key + ": unknown key (DeepSpeed's zero_optimization has no such "
           "field and forbids extra keys)");
    }
    check_type(*spec, value);
    if (spec->field != Field::kNone) {
      const auto [it, first] = seen.try_emplace(spec->field, key, value);
      if (!first && it->second.second != value) {
        fail(STRATA_ERR_INVALID_ARGUMENT,
             "zero_optimization." + key + ": " + value.dump() + " conflicts with " +
                 it->second.first + ": " + it->second.second.dump() +
                 " (the two names are aliases; give one)");
      }
      apply(config, spec->field, value);
    }
    given.emplace_back(spec, &value);
  }
  // Only now is the stage known (object keys come in name order, not as written).
  for (const auto& [spec, value] : given) {
    if (auto entry = without_effect(*spec, *value, config.stage)) {
      config.ignored_keys.push_back(std::move(*entry));
    }
  }
  return config;
}

}  // namespace strata::zero
