// What both hosts (CPU: RuntimeLayers, GPU: cuda/GpuRuntimeLayers) do around a layer: gather its
// group from the runtime, hand the MLP readable weights (and gradient buffers for backward), and
// at the end add the gradients into the runtime's buffers, mark them ready and release. Where the
// f32 values live and how a half model dtype is widened is the subclass's.
#pragma once

#include <cstdint>
#include <optional>
#include <strata/strata.hpp>
#include <vector>

#include "mlp.hpp"

namespace strata::fmnist {

class GroupedLayers : public LayerAccess {
 public:
  LayerBuffers begin(std::size_t layer, bool backward) final;
  void end(std::size_t layer, bool backward) final;

  // Runtime index of the model's parameter p (W1 = 0, b1 = 1, ...).
  uint32_t index(std::size_t p) const { return indices_[p]; }

 protected:
  explicit GroupedLayers(Runtime& runtime) : runtime_(runtime) {}

  // Registers parameter p's index and, per layer, the group of its weight and bias.
  void add_param(uint32_t index) { indices_.push_back(index); }
  void define_layer_groups(std::size_t layers);

  // f32 values of parameter p as the MLP reads them.
  virtual const float* widen(uint32_t p, const ParamView& view) = 0;
  // Where the MLP accumulates parameter p's f32 gradient this micro-batch.
  virtual float* grad_buffer(uint32_t p, const ParamView& view) = 0;
  // Adds that gradient into the runtime's buffer where the two differ (half model dtypes).
  virtual void add_grad_into(uint32_t p, const ParamView& view) = 0;

 private:
  Runtime& runtime_;
  std::vector<uint32_t> indices_;
  std::vector<uint32_t> groups_;
  std::optional<GatheredGroup> held_;  // the layer in use between begin() and end()
};

}  // namespace strata::fmnist
