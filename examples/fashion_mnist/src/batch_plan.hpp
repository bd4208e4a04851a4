// Which samples each rank trains on, micro-step by micro-step.
//
// An epoch is a permutation of the training set, the same on every rank (it depends only on the
// seed and the epoch number). Optimizer step s takes the global batch perm[s·G, (s+1)·G); that
// batch is cut into gradient_accumulation_steps × world_size micro-batches of micro_batch_size,
// and rank r's micro-step m is micro-batch number m·world_size + r. The union over ranks and
// micro-steps is the whole global batch, so any (world, accumulation) split of one global batch
// size sees the same samples per optimizer step. The tail that does not fill a global batch is
// dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace strata::fmnist {

struct BatchShape {
  uint64_t global_batch;  // train_batch_size
  uint64_t micro_batch;   // per rank, per micro-step
  uint64_t accumulation;  // micro-steps per optimizer step
  int world_size;
  int rank;
};

class BatchPlan {
 public:
  // Throws std::invalid_argument if global ≠ micro × accumulation × world or the data set cannot
  // fill one global batch.
  BatchPlan(std::size_t dataset_size, BatchShape shape, uint64_t seed);

  std::size_t steps_per_epoch() const { return steps_per_epoch_; }
  const BatchShape& shape() const { return shape_; }

  // Draws the permutation for `epoch` (0-based).
  void start_epoch(uint64_t epoch);

  // This rank's sample indices for micro-step `micro` of optimizer step `step` in this epoch.
  std::span<const uint32_t> micro_batch(std::size_t step, std::size_t micro) const;

  // The whole permutation start_epoch drew (the identity before the first call).
  std::span<const uint32_t> order() const { return order_; }

 private:
  BatchShape shape_;
  uint64_t seed_;
  std::size_t steps_per_epoch_;
  std::vector<uint32_t> order_;
};

}  // namespace strata::fmnist
