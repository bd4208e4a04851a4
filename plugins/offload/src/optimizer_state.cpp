// The optimizer state as checkpoints see it (ABI 1.6): named fp32 slots per element, read and
// written by range so that a checkpoint can be loaded at another partition layout.
#include <limits>

#include "optimizer.hpp"

namespace strata::offload {
namespace {

// PyTorch's state names (torch.optim.Adam/AdamW/SGD; Lion as in DeepSpeed and lion-pytorch), in
// the order the kernels lay the arrays out (optimizer.cpp: exp_avg_sq follows exp_avg).
constexpr const char* kAdamSlots[] = {"exp_avg", "exp_avg_sq"};
constexpr const char* kSgdSlots[] = {"momentum_buffer"};
constexpr const char* kLionSlots[] = {"exp_avg"};

}  // namespace

std::span<const char* const> Optimizer::slot_names() const {
  switch (config_.kind) {
    case OptimizerKind::sgd:
      if (config_.sgd.momentum > 0.0) return kSgdSlots;
      return {};
    case OptimizerKind::adam:
    case OptimizerKind::adamw:
      return kAdamSlots;
    case OptimizerKind::lion:
      return kLionSlots;
  }
  return {};
}

double Optimizer::configured_lr() const {
  switch (config_.kind) {
    case OptimizerKind::sgd:
      return config_.sgd.lr;
    case OptimizerKind::adam:
    case OptimizerKind::adamw:
      return config_.adam.lr;
    case OptimizerKind::lion:
      return config_.lion.lr;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

double Optimizer::configured_momentum() const {
  switch (config_.kind) {
    case OptimizerKind::sgd:
      if (config_.sgd.momentum > 0.0) return config_.sgd.momentum;
      break;
    case OptimizerKind::adam:
    case OptimizerKind::adamw:
      return config_.adam.beta1;
    case OptimizerKind::lion:
      return config_.lion.beta1;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

void Optimizer::read_state(const strata_state_io_args* args) {
  copy_state(StateStore::Direction::read, args);
}

void Optimizer::write_state(const strata_state_io_args* args) {
  copy_state(StateStore::Direction::write, args);
  state_written_ = true;
}

void Optimizer::copy_state(StateStore::Direction direction, const strata_state_io_args* args) {
  const char* call = direction == StateStore::Direction::read ? "read_state" : "write_state";
  if (!initialized_) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
              std::string(call) + ": init_state must be called first (there is no state yet)");
  }
  const auto slots = static_cast<uint32_t>(slot_names().size());
  const strata_state_io_args& a = sdk::check_state_io(
      args, call, shards_.size(), slots, [this](size_t i) { return shards_[i].count; });
  if (placement_ != Placement::staged) {
    store_->copy_range(direction, a.shard, a.slot, a.first, a.count, a.data);
    return;
  }
  // Staged: the store holds one run of state per staged run of the shard.
  staged_->for_each_run(a.shard, a.first, a.count,
                        [&](size_t run, uint64_t first, uint64_t count, uint64_t offset) {
                          store_->copy_range(direction, run, a.slot, first, count,
                                             a.data + offset);
                        });
}

}  // namespace strata::offload
