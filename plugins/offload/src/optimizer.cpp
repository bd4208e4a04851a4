#include "optimizer.hpp"

#include <hwy/targets.h>

#include <cmath>
#include <string>
#include <vector>

#include "device_ops.hpp"
#include "swap_file.hpp"
#include "tiled_step.hpp"

namespace strata::offload {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT, message);
}

// `buffers`: master and grad must be set (a step); init_state reads the ranges only (ABI 1.8).
void check_shard(const strata_shard& s, size_t i, bool buffers = true) {
  const std::string where = "shards[" + std::to_string(i) + "]";
  if (s.struct_size < offsetof(strata_shard, grad) + sizeof(s.grad)) {
    invalid(where + ".struct_size: expected at least " +
            std::to_string(offsetof(strata_shard, grad) + sizeof(s.grad)) + ", got " +
            std::to_string(s.struct_size));
  }
  if (buffers && s.count > 0 && (s.master == nullptr || s.grad == nullptr)) {
    invalid(where + ": master and grad must not be NULL for a non-empty shard");
  }
  if (STRATA_STRUCT_HAS(&s, strata_shard, model_dtype) && s.model != nullptr &&
      s.model_dtype != STRATA_F16 && s.model_dtype != STRATA_BF16) {
    invalid(where + ".model_dtype: expected f16 or bf16 for a model copy, got " +
            std::string(sdk::dtype_name(s.model_dtype)));
  }
}

// The model-dtype destination of a slice of shard `s` (ABI 1.2), or none.
HalfCopy model_copy(const strata_shard& s, uint64_t begin, bool enabled) {
  if (!enabled || !STRATA_STRUCT_HAS(&s, strata_shard, model_dtype) || s.model == nullptr) {
    return {};
  }
  const HalfType type = s.model_dtype == STRATA_F16 ? HalfType::f16 : HalfType::bf16;
  return {static_cast<uint16_t*>(s.model) + begin, type};
}

// Elements per staged piece with device cpu: 4 Mi (16 MiB of masters, as much of gradients),
// or sub_group_size when that is smaller.
constexpr uint64_t kStagedPiece = uint64_t{1} << 22;
// Staging buffers: one coming down, one stepped, one going up.
constexpr size_t kStagingBuffers = 3;

}  // namespace

Optimizer::Placement Optimizer::placement_for() const {
  // Shards hold device pointers exactly when the job's device is CUDA (ABI 1.7).
  if (!host_.on_cuda()) return Placement::host;
  switch (config_.offload.device) {
    case OffloadDevice::none:
      return Placement::device;
    case OffloadDevice::cpu:
      return Placement::staged;
    case OffloadDevice::nvme:
      break;
  }
  sdk::fail(STRATA_ERR_UNSUPPORTED,
            "offload_optimizer.device: 'nvme' with parameters in CUDA device memory is not "
            "implemented; use 'cpu' (state in host memory, pinned staging) or 'none'");
}

int32_t Optimizer::step_device_type() const {
  if (initialized_) return placement_ == Placement::device ? STRATA_DEVICE_CUDA : STRATA_DEVICE_HOST;
  // Before init_state: the step runs on the job's device when the state stays beside it.
  return host_.on_cuda() && config_.offload.device == OffloadDevice::none ? STRATA_DEVICE_CUDA
                                                                         : STRATA_DEVICE_HOST;
}

std::string Optimizer::state_location() const {
  if (!store_) return std::string();
  if (placement_ == Placement::staged) return store_->describe() + "; " + staged_->describe();
  return store_->describe();
}

Optimizer::Optimizer(const sdk::Host& host, const OptimizerConfig& config)
    : host_(host),
      tracer_(host),
      config_(config),
      isa_(common::cpu::choose_isa(nullptr)),
      kernels_(&kernels_for(isa_.isa)),
      threads_(sdk::cpu_threads(host.raw())),
      pool_(threads_.count) {
  // Bad nvme_path is a configuration error: report it at create, not when the state is made.
  if (config_.offload.device == OffloadDevice::nvme) {
    SwapFile probe(config_.offload.nvme_path, "offload_optimizer.nvme_path");
  }
}

std::string Optimizer::isa_choice() const {
  // "avx2 (the widest this CPU has, Highway AVX2)".
  std::string text = isa_.describe();
  text.insert(text.size() - 1, std::string(", Highway ") + hwy::TargetName(kernels_->target));
  return text;
}

size_t Optimizer::state_floats_per_element() const {
  switch (config_.kind) {
    case OptimizerKind::sgd:
      return config_.sgd.momentum > 0.0 ? 1 : 0;
    case OptimizerKind::adam:
    case OptimizerKind::adamw:
      return 2;  // exp_avg, exp_avg_sq
    case OptimizerKind::lion:
      return 1;  // exp_avg
  }
  return 0;
}

void Optimizer::init_state(std::span<const strata_shard> shards) {
  StateLayout layout;
  layout.floats_per_element = state_floats_per_element();
  std::vector<ShardShape> shapes;
  shapes.reserve(shards.size());
  uint64_t elements = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    check_shard(shards[i], i, /*buffers=*/false);
    layout.shard_counts.push_back(shards[i].count);
    shapes.push_back({shards[i].param_index, shards[i].offset, shards[i].count});
    elements += shards[i].count;
  }
  store_.reset();  // give back the old state (memory, disk) before asking for the new
  staged_.reset();
  run_state_.clear();
  initialized_ = false;
  const OffloadConfig& where = config_.offload;
  placement_ = placement_for();
  if (placement_ == Placement::device) {
    store_ = make_device_store(host_, layout);
  } else if (placement_ == Placement::staged) {
    staged_ = std::make_unique<StagedPipeline>(
        host_, shards, std::min(kStagedPiece, where.sub_group_size), kStagingBuffers,
        where.fused_copy_out);
    // One contiguous run of state per staged run: a piece's state is whole runs.
    StateLayout runs;
    runs.floats_per_element = layout.floats_per_element;
    runs.shard_counts = staged_->run_counts();
    store_ = make_memory_store(host_, runs, where.pin_memory);
    store_->for_each_piece([&](std::span<const StateSlice> slices) {
      for (const StateSlice& s : slices) run_state_.push_back(s.state);
    });
  } else if (where.device == OffloadDevice::nvme) {
    store_ = make_nvme_store(host_, layout, where);
  } else {
    store_ = make_memory_store(host_, layout,
                               where.device == OffloadDevice::cpu && where.pin_memory);
  }
  shards_ = std::move(shapes);
  master_bytes_ = elements * sizeof(float);
  initialized_ = true;
  stepped_ = false;
  state_written_ = false;
}

void Optimizer::check_same_shards(std::span<const strata_shard> shards) const {
  if (!initialized_) invalid("step: init_state must be called before the first step");
  if (shards.size() != shards_.size()) {
    invalid("shards: step got " + std::to_string(shards.size()) + " shards but init_state had " +
            std::to_string(shards_.size()));
  }
  for (size_t i = 0; i < shards.size(); ++i) {
    check_shard(shards[i], i);
    const ShardShape& known = shards_[i];
    if (shards[i].param_index != known.param_index || shards[i].offset != known.offset ||
        shards[i].count != known.count) {
      invalid("shards[" + std::to_string(i) + "]: expected param " +
              std::to_string(known.param_index) + " offset " + std::to_string(known.offset) +
              " count " + std::to_string(known.count) + " as at init_state, got param " +
              std::to_string(shards[i].param_index) + " offset " +
              std::to_string(shards[i].offset) + " count " + std::to_string(shards[i].count));
    }
  }
}

Optimizer::StepScalars Optimizer::resolve(const strata_step_args& args) const {
  if (args.struct_size < offsetof(strata_step_args, step) + sizeof(args.step)) {
    invalid("args.struct_size: too small to hold the step count");
  }
  const double grad_scale =
      STRATA_STRUCT_HAS(&args, strata_step_args, grad_scale) ? args.grad_scale : 1.0;
  const double lr_factor =
      STRATA_STRUCT_HAS(&args, strata_step_args, lr_factor) ? args.lr_factor : 1.0;
  if (args.step < 1) invalid("args.step: expected a 1-based step count, got 0");
  if (!std::isfinite(grad_scale)) invalid("args.grad_scale: expected a finite number");
  if (!std::isfinite(lr_factor) || lr_factor < 0) {
    invalid("args.lr_factor: expected a non-negative finite number, got " +
            std::to_string(lr_factor));
  }
  const double lr = sdk::step_lr(args, configured_lr());
  if (!std::isfinite(lr) || lr < 0) {
    invalid("args.lr: expected a non-negative finite number (or NaN for the configured " +
            std::to_string(configured_lr()) + "), got " + std::to_string(lr));
  }
  double momentum = config_.kind == OptimizerKind::sgd ? config_.sgd.momentum : configured_momentum();
  momentum = sdk::step_momentum(args, momentum);
  if (config_.kind == OptimizerKind::sgd) {
    if (!std::isfinite(momentum) || momentum < 0) {
      invalid("args.momentum: expected SGD's momentum, a non-negative finite number, got " +
              std::to_string(momentum));
    }
    if (momentum > 0 && state_floats_per_element() == 0) {
      invalid("args.momentum: " + std::to_string(momentum) +
              ", but SGD was configured without momentum and keeps no momentum buffer");
    }
  } else if (!(momentum >= 0 && momentum < 1)) {
    invalid("args.momentum: expected beta1 in [0, 1), got " + std::to_string(momentum));
  }
  double beta2 = 0.0;
  if (config_.kind == OptimizerKind::lion) beta2 = sdk::step_beta2(args, config_.lion.beta2);
  if (config_.kind == OptimizerKind::adam || config_.kind == OptimizerKind::adamw) {
    beta2 = sdk::step_beta2(args, config_.adam.beta2);
  }
  if (!(beta2 >= 0 && beta2 < 1)) {
    invalid("args.beta2: expected beta2 in [0, 1), got " + std::to_string(beta2));
  }
  const bool buffer_live = stepped_ || (state_written_ && args.step > 1);
  return {args.step, grad_scale, lr * lr_factor, momentum, beta2, buffer_live};
}

void Optimizer::step(std::span<const strata_shard> shards, const strata_step_args& args) {
  const sdk::TraceScope span(tracer_, "optimizer", -1, master_bytes_);
  const StepScalars k = resolve(args);
  check_same_shards(shards);
  if (placement_ == Placement::staged) {
    step_staged(shards, k);
  } else {
    store_->for_each_piece(
        [&](std::span<const StateSlice> slices) { step_piece(shards, slices, k); });
  }
  // SGD with momentum 0 this step leaves its buffer as it was (torch skips it).
  if (config_.kind != OptimizerKind::sgd || k.momentum > 0) stepped_ = true;
}

void Optimizer::step_staged(std::span<const strata_shard> shards, const StepScalars& k) {
  staged_->step(shards, run_state_,
                [&](std::span<const strata_shard> staged, std::span<const StateSlice> slices) {
                  step_piece(staged, slices, k);
                });
}

void Optimizer::step_piece(std::span<const strata_shard> shards,
                           std::span<const StateSlice> slices, const StepScalars& k) {
  switch (config_.kind) {
    case OptimizerKind::sgd:
      step_sgd(shards, slices, k);
      break;
    case OptimizerKind::adam:
    case OptimizerKind::adamw:
      step_adam(shards, slices, k);
      break;
    case OptimizerKind::lion:
      step_lion(shards, slices, k);
      break;
  }
}

void Optimizer::step_sgd(std::span<const strata_shard> shards,
                         std::span<const StateSlice> slices, const StepScalars& k) {
  const SgdConfig& c = config_.sgd;
  const SgdScalars s = common::optim::make_sgd_scalars(
      {k.lr, k.momentum, c.dampening, c.weight_decay, c.nesterov}, k.grad_scale, k.buffer_live);
  std::vector<SgdArrays> arrays;
  arrays.reserve(slices.size());
  for (const StateSlice& sl : slices) {
    const strata_shard& sh = shards[sl.shard];
    float* buffer = k.momentum > 0.0 ? sl.state : nullptr;
    arrays.push_back({sh.master + sl.begin, sh.grad + sl.begin, buffer, sl.count,
                      model_copy(sh, sl.begin, config_.offload.fused_copy_out)});
  }
  if (placement_ == Placement::device) return device::sgd_step(s, arrays, host_.cuda_stream());
  sgd_step(pool_, *kernels_, s, arrays);
}

void Optimizer::step_adam(std::span<const strata_shard> shards,
                          std::span<const StateSlice> slices, const StepScalars& k) {
  const AdamConfig& c = config_.adam;
  // The bias correction uses this step's beta1, as torch and DeepSpeed do when a schedule
  // changes it; the scalars are formed in double (1 - beta2^t loses most of its digits in float).
  const AdamScalars s = common::optim::make_adam_scalars(
      {k.lr, k.momentum, k.beta2, c.eps, c.weight_decay, c.decoupled_weight_decay,
       c.bias_correction},
      k.step, k.grad_scale);
  std::vector<AdamArrays> arrays;
  arrays.reserve(slices.size());
  for (const StateSlice& sl : slices) {
    const strata_shard& sh = shards[sl.shard];
    float* exp_avg = sl.state;
    float* exp_avg_sq = exp_avg == nullptr ? nullptr : exp_avg + sl.count;
    arrays.push_back({sh.master + sl.begin, sh.grad + sl.begin, exp_avg, exp_avg_sq, sl.count,
                      model_copy(sh, sl.begin, config_.offload.fused_copy_out)});
  }
  if (placement_ == Placement::device) return device::adam_step(s, arrays, host_.cuda_stream());
  adam_step(pool_, *kernels_, s, arrays);
}

void Optimizer::step_lion(std::span<const strata_shard> shards,
                          std::span<const StateSlice> slices, const StepScalars& k) {
  const LionConfig& c = config_.lion;
  const LionScalars s =
      common::optim::make_lion_scalars({k.lr, k.momentum, k.beta2, c.weight_decay}, k.grad_scale);
  std::vector<LionArrays> arrays;
  arrays.reserve(slices.size());
  for (const StateSlice& sl : slices) {
    const strata_shard& sh = shards[sl.shard];
    arrays.push_back({sh.master + sl.begin, sh.grad + sl.begin, sl.state, sl.count,
                      model_copy(sh, sl.begin, config_.offload.fused_copy_out)});
  }
  if (placement_ == Placement::device) return device::lion_step(s, arrays, host_.cuda_stream());
  lion_step(pool_, *kernels_, s, arrays);
}

}  // namespace strata::offload
