// What the training loop (Trainer) needs of a model: train on a micro-batch, count correct
// predictions. The CPU MLP (Mlp) and the GPU one (cuda/gpu_mlp.hpp) both are one; inputs and
// labels always arrive in host memory, as the data reader produces them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::fmnist {

class Model {
 public:
  virtual ~Model() = default;
  virtual std::size_t inputs() const = 0;
  // Forward and backward on n samples (x: n × inputs, y: n labels); adds
  // grad_multiplier × d(mean loss)/dθ into the gradients the runtime holds. Returns the mean
  // cross-entropy loss (not multiplied).
  virtual double train(const float* x, const uint8_t* y, std::size_t n, float grad_multiplier) = 0;
  // Number of the n samples whose arg-max prediction equals the label (n may be 0).
  virtual std::size_t count_correct(const float* x, const uint8_t* y, std::size_t n) = 0;
};

}  // namespace strata::fmnist
