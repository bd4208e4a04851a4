// DeepSpeed's batch-size arithmetic (deepspeed/runtime/config.py, _set_batch_related_parameters
// and _batch_assertion): train = micro * accumulation * world; any two determine the third by
// integer division, and the relation is then checked exactly.
#include "error.hpp"
#include "manifest/manifest.hpp"

#include <limits>
#include <string>

namespace strata::rt {
namespace {

// a * b, saturating so that absurd values fail the relation check instead of wrapping around.
uint64_t times(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) {
    return std::numeric_limits<uint64_t>::max();
  }
  return a * b;
}

}  // namespace

BatchConfig resolve_batch(const Manifest& manifest, int world_size) {
  if (world_size <= 0) {
    throw Error(STRATA_ERR_INTERNAL,
                "resolve_batch: world size must be positive, got " + std::to_string(world_size));
  }
  const uint64_t world = static_cast<uint64_t>(world_size);
  const auto& train = manifest.train_batch_size;
  const auto& micro = manifest.train_micro_batch_size_per_gpu;
  const auto& accum = manifest.gradient_accumulation_steps;

  for (const auto* value : {&train, &micro, &accum}) {
    if (value->has_value() && **value == 0) {
      throw Error(STRATA_ERR_INVALID_ARGUMENT, manifest.source + ": batch sizes must be positive, got 0");
    }
  }

  BatchConfig b{};
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
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                manifest.source +
                    ": Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided");
  }

  const uint64_t product = times(times(b.micro_batch_size, b.gradient_accumulation_steps), world);
  if (b.micro_batch_size == 0 || b.gradient_accumulation_steps == 0 || product != b.train_batch_size) {
    std::string message = manifest.source + ": train_batch_size " + std::to_string(b.train_batch_size) +
                          " != train_micro_batch_size_per_gpu " + std::to_string(b.micro_batch_size) +
                          " * gradient_accumulation_steps " +
                          std::to_string(b.gradient_accumulation_steps) + " * world size " +
                          std::to_string(world) + " (= " + std::to_string(product) + ")";
    if (!derived.empty()) message += "; derived by integer division: " + derived;
    throw Error(STRATA_ERR_INVALID_ARGUMENT, message);
  }
  return b;
}

}  // namespace strata::rt
