// Connects the MLP to the Strata runtime: each layer is a parameter group, gathered around the
// layer's forward and backward and read only through the runtime's views. At ZeRO stages 0-2 that
// costs nothing; at stage 3 it is what lets the runtime keep only a partition of each layer.
//
// The runtime holds parameters and gradients in the manifest's model dtype (f32, f16 or bf16).
// The MLP computes in f32: with a half model dtype a layer is widened into f32 scratch when it is
// gathered, and its f32 gradient is added into the runtime's half gradient when it is released.
#pragma once

#include <cstdint>
#include <optional>
#include <strata/strata.hpp>
#include <vector>

#include "grouped_layers.hpp"
#include "mlp.hpp"

namespace strata::fmnist {

class RuntimeLayers : public GroupedLayers {
 public:
  // Registers W1, b1, W2, ... (initial values from the model's vectors, gradients owned by the
  // runtime), defines one group per layer ("layer1", ...) and finalizes the runtime.
  RuntimeLayers(Runtime& runtime, Mlp& model);


  // Copies the runtime's current parameters into the model's own vectors. Collective (it gathers
  // every layer), so every rank calls it.
  void copy_to_model();

 private:
  // f32 copies of one parameter for a half model dtype.
  struct Scratch {
    std::vector<float> data, grad;
  };
  const float* widen(uint32_t p, const ParamView& view) override;
  float* grad_buffer(uint32_t p, const ParamView& view) override;
  void add_grad_into(uint32_t p, const ParamView& view) override;

  Mlp& model_;
  int32_t dtype_;
  std::vector<std::vector<uint16_t>> half_init_;  // half model dtype: what was registered
  std::vector<Scratch> scratch_;                  // per parameter, half model dtype only
};

}  // namespace strata::fmnist
