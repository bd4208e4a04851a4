#include "trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

namespace strata::fmnist {
namespace {

BatchShape batch_shape(const Runtime& runtime) {
  const TrainingInfo t = runtime.training();
  const WorldInfo w = runtime.world();
  return {t.train_batch_size, t.micro_batch_size, t.gradient_accumulation_steps, w.size, w.rank};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Trainer::Trainer(Runtime& runtime, Model& model, const Dataset& train, const Dataset* test,
                 TrainConfig config)
    : runtime_(runtime),
      model_(model),
      train_(train),
      test_(test),
      config_(config),
      world_(runtime.world()),
      plan_(train.count, batch_shape(runtime), config.seed) {
  if (train.features != model.inputs()) {
    throw std::invalid_argument("training data has " + std::to_string(train.features) +
                                " features per sample, the model expects " +
                                std::to_string(model.inputs()));
  }
  inputs_.resize(plan_.shape().micro_batch * train.features);
  labels_.resize(plan_.shape().micro_batch);
}

StepResult Trainer::train_step(std::size_t step, double& loss_sum, double& samples) {
  const uint64_t accumulation = plan_.shape().accumulation;
  StepResult result;
  StepResult::Time time;
  for (std::size_t micro = 0; micro < accumulation; ++micro) {
    const auto batch = plan_.micro_batch(step, micro);
    gather_batch(train_, batch.data(), batch.size(), inputs_.data(), labels_.data());
    // The runtime averages over ranks; dividing by the accumulation count makes the accumulated
    // gradient the mean over the whole global batch. The loss scale is 1 unless fp16 scaling.
    const auto multiplier = static_cast<float>(runtime_.loss_scale() / double(accumulation));
    // RuntimeLayers reports each layer's gradients ready as its backward ends.
    const double loss = model_.train(inputs_.data(), labels_.data(), batch.size(), multiplier);
    loss_sum += loss * double(batch.size());
    samples += double(batch.size());
    result = runtime_.step();
    time += result.time;
  }
  if (!result.boundary()) {
    throw std::runtime_error("runtime did not step after " + std::to_string(accumulation) +
                             " micro-batches (gradient_accumulation_steps)");
  }
  result.time = time;
  return result;
}

void Trainer::run() {
  if (config_.max_steps != 0 && config_.start_global_steps >= config_.max_steps) return;
  const std::size_t steps_per_epoch = plan_.steps_per_epoch();
  if (config_.start.step >= steps_per_epoch) {
    throw std::invalid_argument("start position: step " + std::to_string(config_.start.step) +
                                " of epoch " + std::to_string(config_.start.epoch + 1) +
                                ", but an epoch has " + std::to_string(steps_per_epoch) + " steps");
  }
  for (uint64_t e = config_.start.epoch; e < uint64_t(config_.epochs); ++e) {
    const auto epoch_start = std::chrono::steady_clock::now();
    plan_.start_epoch(e);
    if (order_hook_) order_hook_(e, plan_.order());
    const std::size_t first_step = e == config_.start.epoch ? config_.start.step : 0;
    // loss × samples, samples; then this rank's step time summed over the timed steps (all but
    // the epoch's first): wall, host, comm_wait, optimizer, gather, runtime_other.
    double totals[8] = {};
    StepResult last;
    uint64_t timed_steps = 0;
    bool stop = false;
    for (std::size_t step = first_step; step < steps_per_epoch && !stop; ++step) {
      double step_loss[2] = {};  // loss × samples, samples
      const DataPosition next = step + 1 < steps_per_epoch ? DataPosition{e, step + 1} : DataPosition{e + 1, 0};
      if (before_step_hook_) before_step_hook_(next);
      last = train_step(step, step_loss[0], step_loss[1]);
      totals[0] += step_loss[0];
      totals[1] += step_loss[1];
      if (step > first_step) {
        const StepResult::Time& t = last.time;
        const double parts[6] = {t.wall, t.host, t.comm_wait, t.optimizer, t.gather,
                                 t.runtime_other};
        for (int i = 0; i < 6; ++i) totals[2 + i] += parts[i];
        ++timed_steps;
      }
      if (step_hook_) {
        if (config_.global_step_loss) runtime_.allreduce(step_loss, 2, STRATA_SUM);
        StepInfo info;
        info.result = last;
        info.next = next;
        info.loss = step_loss[0] / step_loss[1];
        step_hook_(info);
      }
      stop = config_.max_steps != 0 && last.global_steps >= config_.max_steps;
    }
    const double train_seconds = seconds_since(epoch_start);
    runtime_.allreduce(totals, 8, STRATA_SUM);

    EpochStats stats;
    stats.epoch = int(e + 1);
    stats.global_steps = last.global_steps;
    stats.skipped_steps = last.skipped_steps;
    stats.grad_norm = last.grad_norm;
    stats.train_loss = totals[0] / totals[1];
    stats.test_accuracy = test_ != nullptr ? evaluate() : std::nan("");
    stats.samples_per_second = totals[1] / train_seconds;
    stats.seconds = seconds_since(epoch_start);
    stats.stopped_early = stop;
    stats.timed_steps = timed_steps;  // the same on every rank
    if (timed_steps > 0) {
      const double per_step = 1.0 / (double(timed_steps) * double(world_.size));  // mean of ranks
      stats.step_time.wall = totals[2] * per_step;
      stats.step_time.host = totals[3] * per_step;
      stats.step_time.comm_wait = totals[4] * per_step;
      stats.step_time.optimizer = totals[5] * per_step;
      stats.step_time.gather = totals[6] * per_step;
      stats.step_time.runtime_other = totals[7] * per_step;
    }
    if (epoch_hook_) epoch_hook_(stats);
    if (stop) break;
  }
}

double Trainer::evaluate() {
  // Rank r scores the contiguous r-th share of the test set; the counts are summed over ranks.
  const std::size_t n = test_->count;
  const auto ranks = std::size_t(world_.size), rank = std::size_t(world_.rank);
  const std::size_t first = n * rank / ranks, last = n * (rank + 1) / ranks;
  constexpr std::size_t kChunk = 500;
  // Every rank runs the same number of forward passes (the last ones may be short or empty):
  // at ZeRO stage 3 each pass gathers every layer, collectively.
  const std::size_t largest_share = (n + ranks - 1) / ranks;
  const std::size_t passes = (largest_share + kChunk - 1) / kChunk;
  std::vector<float> x(kChunk * test_->features);
  std::vector<uint8_t> y(kChunk);
  double counts[2] = {0.0, double(last - first)};  // correct, scored
  for (std::size_t pass = 0; pass < passes; ++pass) {
    const std::size_t i = std::min(last, first + pass * kChunk);
    const std::size_t m = std::min(kChunk, last - i);
    gather_range(*test_, i, m, x.data(), y.data());
    counts[0] += double(model_.count_correct(x.data(), y.data(), m));
  }
  runtime_.allreduce(counts, 2, STRATA_SUM);
  return counts[0] / counts[1];
}

}  // namespace strata::fmnist
