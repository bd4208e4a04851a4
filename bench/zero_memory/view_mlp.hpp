// A dense ReLU MLP that keeps nothing of its own but the initial values: it registers its
// parameters with gradient = NULL, one group per layer, and reads and writes everything through
// the runtime's views while the layer is gathered — so the runtime's memory report is the whole
// model state. Parameters may be f32 or f16 (the manifest's model dtype); f16 layers are widened
// to f32 scratch for the GEMMs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <strata/strata.hpp>
#include <vector>

namespace strata::bench {

// Page-aligned host memory for initial values. The runtime may read these until it is
// destroyed, so their owner must be declared before (and so outlive) the Runtime.
struct PageBuffer {
  std::unique_ptr<void, decltype(&std::free)> data{nullptr, &std::free};
  std::size_t bytes = 0;  // a whole number of pages
};
using InitialValues = std::vector<PageBuffer>;

class ViewMlp {
 public:
  // sizes = {inputs, hidden..., outputs}. Registers W1, b1, ... and groups fc1, fc2, ..., then
  // finalizes the runtime.
  ViewMlp(Runtime& runtime, InitialValues& storage, std::vector<std::size_t> sizes, uint64_t seed);

  std::size_t parameters() const;  // Ψ

  // Returns to the OS the pages of initial values the runtime no longer reads (the parameters
  // whose view is empty outside a gather: partitioned at stage 3). The buffers stay valid.
  // Returns the bytes handed back.
  std::size_t drop_unused_initial_values();

  // One micro-batch: forward and backward on n samples of random inputs toward random targets
  // (mean squared error), gradients accumulated into the lent buffers. Returns the loss.
  double train_batch(std::size_t n, float grad_multiplier);

 private:
  struct Layer {
    std::size_t in, out;
    uint32_t weight, bias, group;  // runtime indices
    PageBuffer* weight_init;
    PageBuffer* bias_init;
  };
  const float* widen(const ParamView& v, std::vector<float>& scratch) const;
  void add_grad(const ParamView& v, const float* grad, std::size_t count) const;

  Runtime& runtime_;
  std::vector<std::size_t> sizes_;
  int32_t dtype_;
  std::vector<Layer> layers_;
  std::vector<std::vector<float>> activations_;
  std::vector<float> input_, target_, delta_, delta_prev_;
  std::vector<float> weight_scratch_, bias_scratch_, grad_scratch_;  // f16 models only
};

}  // namespace strata::bench
