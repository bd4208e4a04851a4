#include "elastic/batch_rules.hpp"

#include <nlohmann/json.hpp>

#include <limits>

namespace strata::elastic {
namespace {

// a * b, saturating so that absurd values fail the relation check instead of wrapping around.
uint64_t times(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) {
    return std::numeric_limits<uint64_t>::max();
  }
  return a * b;
}

std::optional<uint64_t> positive_key(const nlohmann::json& manifest, const char* key) {
  if (!manifest.contains(key) || manifest.at(key).is_null()) return std::nullopt;
  const nlohmann::json& v = manifest.at(key);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() > 0)) return std::nullopt;
  return v.get<uint64_t>();
}

}  // namespace

Batch deepspeed_batch(const BatchKeys& keys, uint64_t world, const std::string& source) {
  if (world == 0) throw BatchError("batch sizes: world size must be positive, got 0");
  const auto& train = keys.train_batch_size;
  const auto& micro = keys.train_micro_batch_size_per_gpu;
  const auto& accum = keys.gradient_accumulation_steps;
  for (const auto* value : {&train, &micro, &accum}) {
    if (value->has_value() && **value == 0) {
      throw BatchError(source + ": batch sizes must be positive, got 0");
    }
  }

  Batch b{};
  std::string derived;  // which value we computed, for the message if it does not work out
  if (train && micro && accum) {
    b = {*train, *micro, *accum};
  } else if (train && micro) {
    b = {*train, *micro, *train / *micro / world};
    derived = "gradient_accumulation_steps = train_batch_size / train_micro_batch_size_per_gpu / world size";
  } else if (train && accum) {
    b = {*train, *train / world / *accum, *accum};
    derived = "train_micro_batch_size_per_gpu = train_batch_size / world size / gradient_accumulation_steps";
  } else if (micro && accum) {
    b = {times(times(*micro, *accum), world), *micro, *accum};
  } else if (train) {
    b = {*train, *train / world, 1};
    derived = "train_micro_batch_size_per_gpu = train_batch_size / world size, gradient_accumulation_steps = 1";
  } else if (micro) {
    b = {times(*micro, world), *micro, 1};
  } else {
    throw BatchError(source + ": Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided");
  }

  const uint64_t product = times(times(b.micro_batch_size, b.gradient_accumulation_steps), world);
  if (b.micro_batch_size == 0 || b.gradient_accumulation_steps == 0 || product != b.train_batch_size) {
    std::string message = source + ": train_batch_size " + std::to_string(b.train_batch_size) +
                          " != train_micro_batch_size_per_gpu " + std::to_string(b.micro_batch_size) +
                          " * gradient_accumulation_steps " +
                          std::to_string(b.gradient_accumulation_steps) + " * world size " +
                          std::to_string(world) + " (= " + std::to_string(product) + ")";
    if (!derived.empty()) message += "; derived by integer division: " + derived;
    throw BatchError(message);
  }
  return b;
}

BatchPlan read_batch_plan(const nlohmann::json& manifest, const std::string& source) {
  BatchPlan plan;
  plan.keys = {positive_key(manifest, "train_batch_size"),
               positive_key(manifest, "train_micro_batch_size_per_gpu"),
               positive_key(manifest, "gradient_accumulation_steps")};
  if (!manifest.contains("elasticity") || manifest.at("elasticity").is_null()) return plan;
  const nlohmann::json& block = manifest.at("elasticity");
  // DeepSpeed reads the block only when it is enabled; a disabled one is left alone, whatever it
  // holds ("enabled" must still be a boolean, or a typo would silently turn it off).
  if (block.is_object() && block.contains("enabled") && !block.at("enabled").is_boolean()) {
    throw BatchError(source + ": elasticity.enabled: expected true or false, got " + block.at("enabled").dump());
  }
  if (block.is_object() && !block.value("enabled", false)) return plan;
  const ElasticityConfig config = parse_elasticity(block, source);
  if (!config.ignore_non_elastic_batch_info) {
    for (const char* key : {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"}) {
      if (manifest.contains(key)) {
        throw BatchError(source + ": " + key + " is set beside an enabled elasticity block, which " +
                         "sets the batch itself; remove it or set elasticity.ignore_non_elastic_batch_info " +
                         "to true (DeepSpeed's rule)");
      }
    }
  }
  plan.elasticity = config;
  return plan;
}

Batch batch_at(const BatchPlan& plan, uint64_t first_world, uint64_t world, const std::string& source) {
  if (plan.elasticity) {
    const ElasticChoice choice = compute_elastic_config(*plan.elasticity, world, source);
    // DeepSpeed checks its choice as it checks a written batch (_batch_assertion): version 0.2
    // can fit a global batch of 0 to a world size it was not built for.
    return deepspeed_batch({choice.train_batch_size, choice.micro_batch_size, choice.gradient_accumulation_steps},
                           world, source + " (the batch its elasticity block chose)");
  }
  if (first_world == 0 || first_world == world) return deepspeed_batch(plan.keys, world, source);
  const Batch first = deepspeed_batch(plan.keys, first_world, source);
  const uint64_t per_step = times(first.micro_batch_size, world);
  if (first.train_batch_size % per_step == 0) {
    return {first.train_batch_size, first.micro_batch_size, first.train_batch_size / per_step};
  }
  std::string sizes;
  for (uint64_t n = 1; n <= 2 * first_world; ++n) {
    if (first.train_batch_size % times(first.micro_batch_size, n) == 0) {
      sizes += (sizes.empty() ? "" : ", ") + std::to_string(n);
    }
  }
  throw BatchError(source + ": world size " + std::to_string(world) + " cannot keep the global batch " +
                   std::to_string(first.train_batch_size) + " of the first run (" +
                   std::to_string(first_world) + " ranks, micro-batch " +
                   std::to_string(first.micro_batch_size) + "): no whole gradient_accumulation_steps " +
                   "makes micro-batch x accumulation x world size equal it; sizes that do: " + sizes);
}

}  // namespace strata::elastic
