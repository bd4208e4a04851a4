// The data-parallel training loop: micro-batches from a BatchPlan, forward/backward on the MLP,
// gradients handed to the Strata runtime as they complete, one strata step per micro-batch.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <strata/strata.hpp>
#include <vector>

#include "batch_plan.hpp"
#include "dataset.hpp"
#include "model.hpp"

namespace strata::fmnist {

// Where the data stands: the next optimizer step trains step `step` (0-based) of epoch `epoch`
// (0-based). With the seed it fixes every sample that follows (BatchPlan), so a run resumed from a
// checkpoint continues the exact sample order of an uninterrupted one.
struct DataPosition {
  uint64_t epoch = 0;
  uint64_t step = 0;
};

struct TrainConfig {
  int epochs = 10;
  uint64_t seed = 1;       // data order; the model's init is the caller's business
  uint64_t max_steps = 0;  // stop once the runtime's global step count reaches this; 0 = no limit
  // Resuming: where the data continues and the global steps the runtime already counts (a
  // checkpoint's). A start at or past max_steps or past the last epoch trains nothing.
  DataPosition start;
  uint64_t start_global_steps = 0;
  // Reduce each step's loss over ranks (one more small allreduce per step), so that
  // StepInfo::loss is the mean over the whole global batch, the same on every rank and world size.
  bool global_step_loss = false;
};

// What the step hook sees after each optimizer step.
struct StepInfo {
  StepResult result;  // the boundary step's; its `time` is summed over the step's micro-batches
  DataPosition next;  // where the data continues after this step (what a checkpoint must keep)
  // Mean loss over the step's samples: the global batch's with TrainConfig::global_step_loss,
  // else this rank's micro-batches'.
  double loss = 0;
};

struct EpochStats {
  int epoch = 0;              // 1-based
  uint64_t global_steps = 0;  // optimizer steps so far, skipped ones included
  uint64_t skipped_steps = 0;
  double grad_norm = 0;           // global gradient norm (before clipping) of the last step
  double train_loss = 0;          // mean over every sample any rank trained on this epoch
  double test_accuracy = 0;       // whole test set, split over ranks; NaN without a test set
  double samples_per_second = 0;  // global training throughput (evaluation excluded)
  double seconds = 0;             // wall time of the epoch, evaluation included
  bool stopped_early = false;     // max_steps reached inside this epoch
  // Where an optimizer step's time went (StepResult::Time summed over its micro-batches), mean
  // per step over this epoch's steps bar its first (whose wall holds the previous epoch's
  // evaluation, or for epoch 1 the setup since finalize), then mean over ranks. All zero when
  // timed_steps is 0.
  StepResult::Time step_time;
  uint64_t timed_steps = 0;
};

class Trainer {
 public:
  using StepHook = std::function<void(const StepInfo&)>;
  using EpochHook = std::function<void(const EpochStats&)>;
  // Sees each epoch's training-set permutation (BatchPlan::order) as the epoch starts.
  using OrderHook = std::function<void(uint64_t epoch, std::span<const uint32_t> order)>;

  // `model` must be connected to `runtime` (RuntimeLayers, or the GPU host's GpuSession); `test`
  // may be null. All referenced objects must outlive the trainer.
  Trainer(Runtime& runtime, Model& model, const Dataset& train, const Dataset* test,
          TrainConfig config);

  // After every optimizer step (on every rank; between steps, so it may save a checkpoint).
  void on_step(StepHook hook) { step_hook_ = std::move(hook); }
  // Before each optimizer step, with where the data continues after it (what an automatic
  // checkpoint taken at that step must keep: Runtime::set_host_state).
  using BeforeStepHook = std::function<void(const DataPosition& next)>;
  void on_before_step(BeforeStepHook hook) { before_step_hook_ = std::move(hook); }
  void on_epoch(EpochHook hook) { epoch_hook_ = std::move(hook); }  // on every rank
  void on_epoch_order(OrderHook hook) { order_hook_ = std::move(hook); }  // on every rank

  // Trains from config.start until max_steps or the last epoch. The first epoch of a resumed run
  // reports only the steps this run trained.
  void run();

  // Fraction of the test set classified correctly; collective.
  double evaluate();

 private:
  // Trains one optimizer step's micro-batches; returns the boundary step's result, its time
  // summed over the micro-batches.
  StepResult train_step(std::size_t step, double& loss_sum, double& samples);

  Runtime& runtime_;
  Model& model_;
  const Dataset& train_;
  const Dataset* test_;
  TrainConfig config_;
  WorldInfo world_;
  BatchPlan plan_;
  std::vector<float> inputs_;
  std::vector<uint8_t> labels_;
  StepHook step_hook_;
  BeforeStepHook before_step_hook_;
  EpochHook epoch_hook_;
  OrderHook order_hook_;
};

}  // namespace strata::fmnist
