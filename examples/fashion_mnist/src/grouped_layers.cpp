#include "grouped_layers.hpp"

#include <stdexcept>
#include <string>

namespace strata::fmnist {

void GroupedLayers::define_layer_groups(std::size_t layers) {
  for (std::size_t l = 0; l < layers; ++l) {
    groups_.push_back(runtime_.define_group("layer" + std::to_string(l + 1),
                                           {indices_[2 * l], indices_[2 * l + 1]}));
  }
}

LayerBuffers GroupedLayers::begin(std::size_t layer, bool backward) {
  if (held_) throw std::logic_error("GroupedLayers: a layer is already in use");
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

void GroupedLayers::end(std::size_t layer, bool backward) {
  if (!held_) throw std::logic_error("GroupedLayers: no layer in use");
  if (backward) {
    const auto w = static_cast<uint32_t>(2 * layer), b = w + 1;
    add_grad_into(w, runtime_.view(indices_[w]));
    add_grad_into(b, runtime_.view(indices_[b]));
    // Only now are this micro-batch's gradients in the runtime's buffers (on a device: enqueued on
    // the stream the runtime orders its reduction after); telling the runtime lets their reduction
    // overlap the rest of backward.
    runtime_.grad_ready(indices_[w]);
    runtime_.grad_ready(indices_[b]);
  }
  held_->release();  // throws if the runtime refuses, unlike the guard's destructor
  held_.reset();
}

}  // namespace strata::fmnist
