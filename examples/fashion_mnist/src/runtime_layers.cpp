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
    : runtime_(runtime), model_(model), dtype_(runtime.training().model_dtype) {
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
    indices_.push_back(runtime.register_param(p.name, static_cast<strata_dtype>(dtype_), init,
                                              nullptr, p.data.size()));
  }
  for (std::size_t l = 0; l < model.layers(); ++l) {
    groups_.push_back(runtime.define_group("layer" + std::to_string(l + 1),
                                           {indices_[2 * l], indices_[2 * l + 1]}));
  }
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

LayerBuffers RuntimeLayers::begin(std::size_t layer, bool backward) {
  if (held_) throw std::logic_error("RuntimeLayers: a layer is already in use");
  held_.emplace(runtime_, groups_[layer], backward ? STRATA_GATHER_FOR_BACKWARD : 0u);
  const auto w = static_cast<uint32_t>(2 * layer), b = w + 1;
  const ParamView wv = runtime_.view(indices_[w]);
  const ParamView bv = runtime_.view(indices_[b]);
  LayerBuffers buffers;
  buffers.weight = widen(w, wv);
  buffers.bias = widen(b, bv);
  if (backward) {
    buffers.weight_grad = grad_buffer(w, wv);
    buffers.bias_grad = grad_buffer(b, bv);
  }
  return buffers;
}

void RuntimeLayers::end(std::size_t layer, bool backward) {
  if (!held_) throw std::logic_error("RuntimeLayers: no layer in use");
  if (backward) {
    const auto w = static_cast<uint32_t>(2 * layer), b = w + 1;
    add_grad_into(w, runtime_.view(indices_[w]));
    add_grad_into(b, runtime_.view(indices_[b]));
    // Only now are this micro-batch's gradients in the runtime's buffers; telling the runtime
    // lets their reduction overlap the rest of backward.
    runtime_.grad_ready(indices_[w]);
    runtime_.grad_ready(indices_[b]);
  }
  held_->release();  // throws if the runtime refuses, unlike the guard's destructor
  held_.reset();
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
