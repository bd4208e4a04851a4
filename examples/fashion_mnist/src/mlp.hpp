// A multi-layer perceptron (dense layers, ReLU between them, softmax cross-entropy on top) whose
// forward and backward passes are CBLAS GEMMs. Parameters start in plain host vectors; a training
// host may route every access to a layer's buffers elsewhere (LayerAccess), so that a runtime that
// partitions parameters (ZeRO stage 3) can gather each layer just for the time it is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model.hpp"

namespace strata::fmnist {

struct Param {
  std::string name;  // "W1", "b1", ...
  std::vector<float> data;
  std::vector<float> grad;  // accumulated (+=) by backward; whoever steps zeroes it
};

// One dense layer's buffers for the duration of its forward or backward pass.
struct LayerBuffers {
  const float* weight = nullptr;  // in × out, row-major
  const float* bias = nullptr;    // out
  float* weight_grad = nullptr;   // backward only: accumulate (+=) into these
  float* bias_grad = nullptr;
};

// How the MLP reaches a layer's parameters. begin() is called before the layer's forward
// (backward = false) or backward (true) and its buffers are used until the matching end().
// Every rank makes the same sequence of calls for the same batch shapes.
class LayerAccess {
 public:
  virtual ~LayerAccess() = default;
  virtual LayerBuffers begin(std::size_t layer, bool backward) = 0;
  virtual void end(std::size_t layer, bool backward) = 0;
};

class Mlp : public Model {
 public:
  // sizes = {inputs, hidden..., classes}, e.g. {784, 256, 128, 10}.
  explicit Mlp(std::vector<std::size_t> sizes);

  // He uniform for layers followed by ReLU, Glorot uniform for the output layer, zero biases.
  // Depends only on `seed`, so every rank that uses the same seed starts identical.
  void init(uint64_t seed);

  // Routes layer accesses through `access` (must outlive the model); null: the own vectors.
  void set_access(LayerAccess* access) { access_ = access; }

  // W1, b1, W2, b2, ... in forward order. Wl is row-major [in × out].
  std::vector<Param>& params() { return params_; }
  const std::vector<Param>& params() const { return params_; }
  std::size_t inputs() const override { return sizes_.front(); }
  std::size_t classes() const { return sizes_.back(); }
  std::size_t layers() const { return sizes_.size() - 1; }

  // Forward and backward on n samples (x: n × inputs, y: n labels). Adds
  // grad_multiplier × d(mean loss)/dθ into every param's grad and calls
  // on_grad_ready(param index) as soon as that gradient is complete (output layer first).
  // Returns the mean cross-entropy loss (not multiplied).
  double train_batch(const float* x, const uint8_t* y, std::size_t n, float grad_multiplier,
                     const std::function<void(std::size_t)>& on_grad_ready = {});
  // Model: train_batch without the callback.
  double train(const float* x, const uint8_t* y, std::size_t n, float grad_multiplier) override {
    return train_batch(x, y, n, grad_multiplier);
  }

  // Mean cross-entropy loss without touching gradients.
  double loss(const float* x, const uint8_t* y, std::size_t n);

  // Number of the n samples whose arg-max prediction equals the label. n may be 0 (the layers are
  // still visited, so that every rank keeps the same gather sequence).
  std::size_t count_correct(const float* x, const uint8_t* y, std::size_t n) override;

 private:
  Param& weight(std::size_t layer) { return params_[2 * layer]; }
  Param& bias(std::size_t layer) { return params_[2 * layer + 1]; }
  LayerBuffers begin_layer(std::size_t layer, bool backward);
  void end_layer(std::size_t layer, bool backward);
  // Fills activations_ (post-ReLU hidden outputs, logits last) for n samples.
  void forward(const float* x, std::size_t n);
  const float* layer_input(const float* x, std::size_t layer) const;

  std::vector<std::size_t> sizes_;
  std::vector<Param> params_;
  std::vector<std::vector<float>> activations_;  // per layer: n × sizes_[layer + 1]
  std::vector<float> delta_, delta_prev_;        // gradient w.r.t. a layer's pre-activation
  LayerAccess* access_ = nullptr;
};

// Softmax cross-entropy over rows of `logits` (n × classes). Returns the mean loss; when `dlogits`
// is non-null writes scale × (softmax − onehot) into it.
double softmax_cross_entropy(const float* logits, const uint8_t* y, std::size_t n,
                             std::size_t classes, float scale, float* dlogits);

}  // namespace strata::fmnist
