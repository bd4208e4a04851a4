// Stages 0-1 keep whole gradients across micro-batches. Where the host registered grad = NULL
// (ABI 1.1) the plugin allocates that whole buffer itself and uses it exactly like a host one.
#pragma once

#include "param.hpp"

#include <strata/plugin.hpp>

#include <vector>

namespace strata::zero {

class FullGrads {
 public:
  FullGrads() = default;
  // Allocates a zeroed buffer (STRATA_MEM_GRADS) for every non-empty parameter of `params`
  // without one, and points its `grad` there.
  FullGrads(const sdk::Host& host, std::vector<ParamRecord>& params);
  // Zeroes every parameter's gradient, host-owned or ours.
  static void zero(const std::vector<ParamRecord>& params);

 private:
  std::vector<sdk::HostArray<unsigned char>> owned_;
};

}  // namespace strata::zero
