// A synthetic model held in a 16-bit dtype (f16 or bf16, whatever the manifest's precision
// stratum asks for) with odd tensor sizes, bound to the runtime through groups and views (the
// runtime owns the gradients), so the same host runs at every ZeRO stage. Its "loss" is
// 0.5·c·|w − t|² with targets t that differ per rank, step and micro-batch, so gradients differ
// across ranks and the parameters keep moving. Gradients are computed in float and accumulated
// into the runtime's 16-bit buffers, as a mixed-precision host does.
#pragma once

#include <cstdint>
#include <optional>
#include <strata/strata.hpp>
#include <string>
#include <vector>

namespace strata::mixedtest {

// A non-finite value planted in one gradient element (the middle one of `param`).
struct Poison {
  std::string param;
  float value;
};

class SyntheticModel {
 public:
  // Registers the parameters (initialised from `seed`), defines one group per layer and
  // finalizes. Collective.
  SyntheticModel(Runtime& runtime, uint64_t seed);

  strata_dtype dtype() const { return dtype_; }
  std::size_t parameters() const;

  // Accumulates one micro-batch's gradient, multiplied by `multiplier` (loss scale divided by the
  // accumulation steps), layer by layer in reverse as backward would. With `expect_zero_grads`
  // (the first micro-batch of a step) every gradient buffer must read zero before the add: the
  // runtime zeroes them after each boundary, skipped ones included. Collective at stages 2-3.
  void backward(uint64_t step, uint64_t micro, double multiplier,
                const std::optional<Poison>& poison, bool expect_zero_grads);

  // FNV-1a over every parameter's raw 16-bit values, in registration order. Collective at
  // stage 3 (each layer is gathered).
  uint64_t hash();

  // True when every parameter value is finite.
  bool finite();

 private:
  struct Tensor {
    std::string name;
    std::vector<uint16_t> init;  // host-owned initial values (the runtime's `data` buffer)
    uint32_t index = 0;
  };

  // Calls `fn(tensor, view)` for every tensor of every layer, each layer gathered with `flags`.
  template <class Fn>
  void for_each_gathered(uint32_t flags, bool reverse, Fn&& fn);

  Runtime& runtime_;
  strata_dtype dtype_;
  int rank_;
  uint64_t seed_;
  std::vector<Tensor> tensors_;
  std::vector<std::vector<std::size_t>> layers_;  // tensor positions per layer
  std::vector<uint32_t> groups_;
};

}  // namespace strata::mixedtest
