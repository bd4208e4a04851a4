// The engine's step pipeline (strata_step; docs/DESIGN.md, "The step pipeline"): at an
// accumulation boundary the sharding stratum finishes the reduction, the precision stratum checks
// the gradients, and either the step is skipped (the loss scale lowered) or the offload stratum
// steps, the model copies are made, the sharding stratum publishes and the loss scale is updated;
// then the gradients are zeroed. Each phase is timed into the step split and the timeline.
#include "device/cuda_device.hpp"
#include "engine/engine.hpp"
#include "engine/engine_calls.hpp"
#include "error.hpp"
#include "log.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace strata::rt {

strata_step_result Engine::step() {
  require_finalized("step");
  const strata_step_result result = guarded(ApiCall::Step, -1, [&] {
    open_micro_batch();   // a micro-batch with no other runtime call opens here
    close_micro_batch();  // this rank's micro-batch counts in the boundary's average
    return step_once();
  });
  if (result.outcome != STRATA_STEP_ACCUMULATED) auto_save();  // the manifest's checkpoint block
  return result;
}

strata_step_result Engine::step_once() {
  strata_step_result result{};
  result.struct_size = sizeof(result);
  const bool at_boundary = boundary();
  ++micro_steps_;
  if (sharding_has_groups()) {
    strata_micro_step_args args{};
    args.struct_size = sizeof(args);
    args.boundary = at_boundary ? 1 : 0;
    sharding_.call("end_micro_step", &strata_sharding_ops::end_micro_step, &args);
  }
  if (at_boundary) {
    phase("finish_reduce", TimePart::RuntimeOther,
          [&] { sharding_.call("finish_reduce", &strata_sharding_ops::finish_reduce); });
    // With "join": a window in which no rank stepped a micro-batch of its own (the last rank
    // joined inside it) applies nothing and is no optimizer step.
    const uint64_t contributions = exchange_window_state(true);
    if (join_tracking() && contributions == 0) {
      sharding_.call("zero_grad", &strata_sharding_ops::zero_grad);
      result.outcome = STRATA_STEP_ACCUMULATED;
      return finish_step_result(result);
    }
    const std::span<const strata_shard> owned = owned_shards();
    const strata_shard* shards = owned.data();
    const size_t count = owned.size();
    auto stats = new_caps<strata_grad_stats>();
    phase("grad_stats", TimePart::RuntimeOther, [&] {
      precision_.call("grad_stats", &strata_precision_ops::grad_stats, shards, count, &stats);
    });
    // [non-finite flag, sum of squares]: summed over ranks when each holds only a partition.
    double local[2] = {stats.nonfinite != 0 ? 1.0 : 0.0, stats.sum_sq};
    double global[2] = {local[0], local[1]};
    if (sharding_caps_.shards_replicated == 0) {
      collectives_->allreduce(local, global, 2, STRATA_F64, STRATA_SUM);
    }
    const double scale = loss_scale();
    const bool overflow = global[0] > 0.0 || !std::isfinite(global[1]);
    ++global_steps_;
    if (overflow) {
      ++skipped_steps_;
      phase("loss_scale", TimePart::Optimizer,
            [&] { precision_.call("update", &strata_precision_ops::update, 1); });
      if (world_.rank == 0) {
        logger().warn("step {}: non-finite gradients; step skipped on every rank. "
                      "Attempted loss scale: {}, next: {}", global_steps_, scale, loss_scale());
      }
      if (timeline_) {
        timeline_->instant("step", "skipped_step",
                           "non-finite gradients; loss scale " + std::to_string(scale) + " -> " +
                               std::to_string(loss_scale()));
      }
      result.outcome = STRATA_STEP_SKIPPED;
      result.grad_norm = std::numeric_limits<double>::infinity();
      ++consecutive_skips_;
      if (precision_caps_.dynamic_scaling == 0 &&
          consecutive_skips_ >= manifest_.max_consecutive_skips) {
        fail_runaway_skips(shards, count);
      }
    } else {
      consecutive_skips_ = 0;
      // With ranks that joined (engine_join.cpp), the mean over the micro-batches contributed.
      const double effective_scale = scale / contribution_factor(contributions);
      result.grad_norm = std::sqrt(global[1]) / effective_scale;
      apply_step(shards, count, effective_scale, result.grad_norm);
      result.outcome = STRATA_STEP_APPLIED;
    }
    phase("zero_grad", TimePart::RuntimeOther,
          [&] { sharding_.call("zero_grad", &strata_sharding_ops::zero_grad); });
    // A save being written completes at the first boundary after every rank has written its part.
    if (pending_save_) finish_save(false);
  } else {
    result.outcome = STRATA_STEP_ACCUMULATED;
  }
  return finish_step_result(result);
}

strata_step_result Engine::finish_step_result(strata_step_result& result) {
  // strata_step returns when the step's device work is done (API 1.7).
  cuda::synchronize(host_services_.stream(), host_services_.device(), "step");
  result.loss_scale = loss_scale();
  result.global_steps = global_steps_;
  result.skipped_steps = skipped_steps_;
  activity_.set_progress(global_steps_, micro_steps_);
  report_step_time(result);
  return result;
}

// Collective (every rank skipped alike). Names the first parameter, in registration order, whose
// reduced gradient holds an inf or nan on any rank, and the first such element in it.
void Engine::fail_runaway_skips(const strata_shard* shards, size_t count) {
  constexpr int64_t kElementBits = 40;
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  int64_t mine = kNone;
  std::vector<float> staged;  // a device shard's gradient, copied to the host to be read
  for (size_t i = 0; i < count; ++i) {
    const strata_shard& s = shards[i];
    const float* grad = s.grad;
    const strata_device device = host_services_.device();  // where every shard lives
    if (device.type != STRATA_DEVICE_HOST) {
      staged.resize(s.count);
      cuda::copy(staged.data(), s.grad, s.count * sizeof(float), device,
                 "naming the non-finite gradient");
      grad = staged.data();
    }
    for (uint64_t e = 0; e < s.count; ++e) {
      if (std::isfinite(grad[e])) continue;
      const uint64_t element = std::min<uint64_t>(s.offset + e, (uint64_t{1} << kElementBits) - 1);
      mine = std::min(mine, static_cast<int64_t>((uint64_t{s.param_index} << kElementBits) | element));
      break;
    }
  }
  int64_t first = mine;
  if (sharding_caps_.shards_replicated == 0) {
    collectives_->allreduce(&mine, &first, 1, STRATA_I64, STRATA_MIN);
  }
  std::string where = "no gradient element is inf or nan, so the sum of squares overflowed";
  if (first != kNone) {
    const auto param = static_cast<size_t>(first >> kElementBits);
    where = "the first parameter with a non-finite gradient is " +
            registry_.params()[param].signature() + " (element " +
            std::to_string(first & ((int64_t{1} << kElementBits) - 1)) + ")";
  }
  throw Error(STRATA_ERR_NUMERIC,
              "step " + std::to_string(global_steps_) + ": " + std::to_string(consecutive_skips_) +
                  " steps in a row had non-finite gradients (max_consecutive_skips = " +
                  std::to_string(manifest_.max_consecutive_skips) + ") and precision plugin '" +
                  precision_.name() + "' (" + strata_dtype_name(precision_caps_.model_dtype) +
                  ") has no loss scale to lower; " + where +
                  ". Check the learning rate, the data and the loss for inf or nan");
}

void Engine::apply_step(const strata_shard* shards, size_t count, double scale, double norm) {
  // DeepSpeed's fused unscale and clip: one factor applied inside the optimizer's pass.
  const double clipping = manifest_.gradient_clipping;
  const double clip = clipping > 0.0 ? std::max(1.0, (norm + 1e-6) / clipping) : 1.0;
  strata_step_args args{};
  args.struct_size = sizeof(args);
  args.step = ++applied_steps_;
  args.grad_scale = 1.0 / (scale * clip);
  args.lr_factor = 1.0;
  // NaN leaves the optimizer's configured value.
  args.lr = schedule_ || !std::isnan(lr_override_) ? lr() : std::numeric_limits<double>::quiet_NaN();
  args.momentum = schedule_ ? schedule_->momentum(schedule_iteration_)
                            : std::numeric_limits<double>::quiet_NaN();
  args.beta2 = schedule_ ? schedule_->beta2(schedule_iteration_)
                         : std::numeric_limits<double>::quiet_NaN();
  phase("optimizer", TimePart::Optimizer,
        [&] { offload_.call("step", &strata_offload_ops::step, shards, count, &args); });
  phase("copy_out", TimePart::Optimizer, [&] { model_copies_.after_step(shards, count); });
  phase("publish", TimePart::Optimizer,
        [&] { sharding_.call("publish", &strata_sharding_ops::publish); });
  phase("loss_scale", TimePart::Optimizer,
        [&] { precision_.call("update", &strata_precision_ops::update, 0); });
  ++schedule_iteration_;  // DeepSpeed steps its scheduler after applied steps only
}

}  // namespace strata::rt
