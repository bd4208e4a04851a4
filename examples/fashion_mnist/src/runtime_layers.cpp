#include "runtime_layers.hpp"

#include <strata/half.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace strata::fmnist {
namespace {

// `what()` names the buffer; called only on failure (no string built per call).
template <class What>
void* checked(void* p, What&& what) {
  if (p == nullptr) throw std::logic_error("runtime gave no buffer for " + what());
  return p;
}

float to_float(uint16_t h, int32_t dtype) {
  return dtype == STRATA_BF16 ? bf16_to_float(h) : f16_to_float(h);
}

uint16_t to_half(float f, int32_t dtype) {
  return dtype == STRATA_BF16 ? float_to_bf16(f) : float_to_f16(f);
}

}  // namespace

RuntimeLayers::RuntimeLayers(Runtime& runtime, Mlp& model)
    : GroupedLayers(runtime), model_(model), dtype_(runtime.training().model_dtype) {
  if (dtype_ != STRATA_F32 && dtype_ != STRATA_F16 && dtype_ != STRATA_BF16) {
    throw std::runtime_error(std::string("the manifest's precision stratum wants parameters in ") +
                             strata_dtype_name(dtype_) + "; this example handles f32, f16, bf16");
  }
  for (Param& p : model.params()) {
    void* init = p.data.data();
    if (dtype_ != STRATA_F32) {
      auto& half = half_init_.emplace_back(p.data.size());
      std::transform(p.data.begin(), p.data.end(), half.begin(),
                     [&](float f) { return to_half(f, dtype_); });
      init = half.data();
      scratch_.emplace_back();
    }
    add_param(runtime.register_param(p.name, static_cast<strata_dtype>(dtype_), init, nullptr,
                                     p.data.size()));
  }
  define_layer_groups(model.layers());
  runtime.finalize();
  model.set_access(this);
}

const float* RuntimeLayers::widen(uint32_t p, const ParamView& view) {
  void* data = checked(view.data, [&] { return model_.params()[p].name; });
  if (dtype_ == STRATA_F32) return static_cast<const float*>(data);
  const auto* half = static_cast<const uint16_t*>(data);
  auto& wide = scratch_[p].data;
  wide.resize(view.count);
  for (std::size_t i = 0; i < wide.size(); ++i) wide[i] = to_float(half[i], dtype_);
  return wide.data();
}

float* RuntimeLayers::grad_buffer(uint32_t p, const ParamView& view) {
  void* grad = checked(view.grad, [&] { return "the gradient of " + model_.params()[p].name; });
  if (dtype_ == STRATA_F32) return static_cast<float*>(grad);
  scratch_[p].grad.assign(view.count, 0.0f);
  return scratch_[p].grad.data();
}

// The MLP accumulated this micro-batch's gradient into f32 scratch; the runtime's buffer may
// already hold earlier micro-batches' (stages 0-1 keep gradients across micro-batches).
void RuntimeLayers::add_grad_into(uint32_t p, const ParamView& view) {
  if (dtype_ == STRATA_F32) return;
  void* grad = checked(view.grad, [&] { return "the gradient of " + model_.params()[p].name; });
  auto* half = static_cast<uint16_t*>(grad);
  const auto& wide = scratch_[p].grad;
  for (std::size_t i = 0; i < wide.size(); ++i) {
    half[i] = to_half(to_float(half[i], dtype_) + wide[i], dtype_);
  }
}

void RuntimeLayers::copy_to_model() {
  for (std::size_t l = 0; l < model_.layers(); ++l) {
    const LayerBuffers b = begin(l, false);
    auto& w = model_.params()[2 * l].data;
    auto& bias = model_.params()[2 * l + 1].data;
    // At stages 0-2 with f32 the runtime's view is the model's own vector: nothing to copy.
    if (b.weight != w.data()) std::copy(b.weight, b.weight + w.size(), w.begin());
    if (b.bias != bias.data()) std::copy(b.bias, b.bias + bias.size(), bias.begin());
    end(l, false);
  }
}

}  // namespace strata::fmnist
