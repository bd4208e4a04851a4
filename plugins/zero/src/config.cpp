#include "config.hpp"

#include "config_keys.hpp"

#include <strata/plugin.hpp>
#include <strata_common/config_reader.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace strata::zero {
namespace {

using namespace common::config;

const KeySpec* find_key(std::string_view name) {
  for (const KeySpec& spec : kKeys) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

// Stores a count into the field it sets.
void store_count(ZeroConfig& config, Field field, int64_t value) {
  const auto count = static_cast<uint64_t>(value);  // the reader checked value >= 0
  switch (field) {
    case Field::kReduceBucketSize: config.reduce_bucket_size = count; return;
    case Field::kAllgatherBucketSize: config.allgather_bucket_size = count; return;
    case Field::kPrefetchBucketSize: config.prefetch_bucket_size = count; return;
    case Field::kPersistenceThreshold: config.param_persistence_threshold = count; return;
    case Field::kMaxLiveParameters: config.max_live_parameters = count; return;
    case Field::kMaxReuseDistance: config.max_reuse_distance = count; return;
    default: return;
  }
}

// Checks a given key's value against its kind (DeepSpeed's field type) and stores it in the
// setting it feeds, if any. null is refused except where DeepSpeed's field is Optional.
void read_key(ObjectReader& zero, const KeySpec& spec, ZeroConfig& config) {
  const std::string key(spec.name);
  switch (spec.kind) {
    case Kind::kStage:
      config.stage = static_cast<int>(zero.whole_number(key, 0, 0, 3, "0, 1, 2 or 3"));
      return;
    case Kind::kPositiveInt:
      store_count(config, spec.field,
                  zero.whole_number(key, 1, 1, INT64_MAX, "a positive integer"));
      return;
    case Kind::kNonNegInt:
      store_count(config, spec.field,
                  zero.whole_number(key, 0, 0, INT64_MAX, "a non-negative integer"));
      return;
    case Kind::kInt: zero.whole_number(key, 0, INT64_MIN, INT64_MAX, "an integer"); return;
    case Kind::kBool: {
      const bool value = zero.boolean(key, true);
      if (spec.field == Field::kContiguousGradients) config.contiguous_gradients = value;
      return;
    }
    case Kind::kOptionalBool: {
      const std::optional<bool> value = zero.boolean_or_null(key);  // null keeps the default
      if (value && spec.field == Field::kOverlapComm) config.overlap_comm = *value;
      return;
    }
    case Kind::kOptionalObject: zero.object_or_null(key); return;
    case Kind::kObject: zero.object(key); return;
    case Kind::kCommDtype:
      // DeepSpeed's spellings; null keeps the default.
      if (const auto name = zero.choice_or_null(key, {"fp32", "fp16", "bf16"})) {
        config.communication_dtype = *name == "fp16"   ? STRATA_F16
                                     : *name == "bf16" ? STRATA_BF16
                                                       : STRATA_F32;
      }
      return;
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
  const json root = parse_object(text, "zero_optimization", "invalid JSON");
  ObjectReader zero(root, "zero_optimization", ".", Nulls::refused);
  ZeroConfig config;
  std::map<Field, std::string> first_spelling;  // of each aliased field given
  for (const KeySpec& spec : kKeys) {
    const json* value = zero.find(std::string(spec.name));
    if (value == nullptr) continue;
    read_key(zero, spec, config);
    if (spec.field == Field::kNone) continue;
    // The table lists a bare name before its stage3_ alias, so the alias is the one named.
    const auto [it, first] = first_spelling.try_emplace(spec.field, spec.name);
    if (!first && root.at(it->second) != *value) {
      zero.invalid(std::string(spec.name),
                   value->dump() + " conflicts with " + it->second + ": " +
                       root.at(it->second).dump() + " (the two names are aliases; give one)");
    }
  }
  zero.reject_unknown(" (DeepSpeed's zero_optimization has no such field and forbids extra keys)");
  // Only now is the stage known. Named in the order the object keeps its keys (by name).
  for (const auto& [key, value] : root.items()) {
    if (auto entry = without_effect(*find_key(key), value, config.stage)) {
      config.ignored_keys.push_back(std::move(*entry));
    }
  }
  return config;
}

}  // namespace strata::zero
