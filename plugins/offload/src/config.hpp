// The offload plugin's configuration: DeepSpeed's `optimizer` block plus where it runs (offload_config.hpp).
#pragma once

#include <string_view>

#include "offload_config.hpp"

namespace strata::offload {

enum class OptimizerKind { sgd, adam, adamw, lion };

// torch.optim.SGD semantics (L2 weight decay added to the gradient).
struct SgdConfig {
  double lr = 0.0;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

// Adam and AdamW. `decoupled_weight_decay` is DeepSpeed's adam_w_mode: true decays the parameter
// directly (p -= lr*wd*p, as torch.optim.AdamW), false adds wd*p to the gradient
// (torch.optim.Adam).
struct AdamConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool bias_correction = true;
  bool decoupled_weight_decay = true;
};

// Lion (Chen et al. 2023), DeepSpeed's "Lion" type: c = b1*m + (1-b1)*g;
// p -= lr * (sign(c) + wd*p); m = b2*m + (1-b2)*g.
struct LionConfig {
  double lr = 1e-3;  // DeepSpeed's default
  double beta1 = 0.9;
  double beta2 = 0.99;
  double weight_decay = 0.0;
};

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::adam;
  SgdConfig sgd;    // used when kind == sgd
  AdamConfig adam;  // used when kind == adam or adamw
  LionConfig lion;  // used when kind == lion
  OffloadConfig offload;
};

// Parses and validates the whole config object ({"optimizer", "offload_optimizer", "offload_param",
// "sub_group_size"}). Throws sdk::Error naming the JSON path: STRATA_ERR_INVALID_ARGUMENT for bad
// values, STRATA_ERR_UNSUPPORTED for a combination this build cannot run.
OptimizerConfig parse_offload_config(std::string_view json_text);

// Lower-case name reported by query(): "sgd", "adam", "adamw" or "lion". Static storage.
const char* optimizer_name(OptimizerKind kind);

}  // namespace strata::offload
