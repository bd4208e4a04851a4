#include "batch_plan.hpp"

#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

namespace strata::fmnist {

BatchPlan::BatchPlan(std::size_t dataset_size, BatchShape shape, uint64_t seed)
    : shape_(shape), seed_(seed), order_(dataset_size) {
  const uint64_t split = shape.micro_batch * shape.accumulation * uint64_t(shape.world_size);
  if (shape.global_batch == 0 || split != shape.global_batch) {
    throw std::invalid_argument(
        "batch plan: train_batch_size " + std::to_string(shape.global_batch) + " != micro batch " +
        std::to_string(shape.micro_batch) + " x accumulation " +
        std::to_string(shape.accumulation) + " x world size " + std::to_string(shape.world_size));
  }
  steps_per_epoch_ = dataset_size / shape.global_batch;
  if (steps_per_epoch_ == 0) {
    throw std::invalid_argument("batch plan: " + std::to_string(dataset_size) +
                                " samples cannot fill one global batch of " +
                                std::to_string(shape.global_batch));
  }
  std::iota(order_.begin(), order_.end(), 0u);
}

void BatchPlan::start_epoch(uint64_t epoch) {
  std::iota(order_.begin(), order_.end(), 0u);
  // Fisher-Yates on raw mt19937_64 output: std::shuffle's use of the engine is library-specific,
  // this is the same everywhere. The modulo bias is below 2^-40 for data-set sized ranges.
  // seed_seq keeps 32-bit words, so split the 64-bit values rather than truncating them.
  std::seed_seq seq{uint32_t(seed_), uint32_t(seed_ >> 32), uint32_t(epoch), uint32_t(epoch >> 32)};
  std::mt19937_64 rng(seq);
  for (std::size_t i = order_.size(); i > 1; --i) {
    const std::size_t j = rng() % i;
    std::swap(order_[i - 1], order_[j]);
  }
}

std::span<const uint32_t> BatchPlan::micro_batch(std::size_t step, std::size_t micro) const {
  if (step >= steps_per_epoch_ || micro >= shape_.accumulation) {
    throw std::out_of_range("batch plan: no micro-batch " + std::to_string(micro) + " in step " +
                            std::to_string(step));
  }
  const std::size_t slot = micro * std::size_t(shape_.world_size) + std::size_t(shape_.rank);
  const std::size_t first = step * shape_.global_batch + slot * shape_.micro_batch;
  return {order_.data() + first, shape_.micro_batch};
}

}  // namespace strata::fmnist
