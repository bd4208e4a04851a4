// strata_amp's configuration: DeepSpeed's `fp16` and `bf16` blocks (deepspeed/runtime/
// precision_config.py: the same key names, defaults and meanings), plus two keys of its own:
// `dtype` ("fp32" | "fp16" | "bf16", an alternative way to choose) and `threads`.
#pragma once

#include <strata/plugin_api.h>

#include <string>
#include <vector>

#include "loss_scaler.hpp"

namespace strata::amp {

struct PrecisionConfig {
  strata_dtype model_dtype = STRATA_F32;
  LossScalerConfig scaler;  // used when model_dtype is STRATA_F16
  unsigned threads = 0;     // for large casts and grad_stats; 0 = this rank's share of the node
  // Accepted DeepSpeed keys that change nothing here, one sentence each, for the log.
  std::vector<std::string> warnings;
};

// Parses {"fp16": {...}, "bf16": {...}, "dtype": "...", "threads": N} (each optional; NULL or ""
// is {}). Throws sdk::Error (STRATA_ERR_INVALID_ARGUMENT) naming the key, the value and what was
// expected.
PrecisionConfig parse_precision_config(const char* json_text);

}  // namespace strata::amp
