// strata_amp's configuration: DeepSpeed's `fp16` and `bf16` blocks.
#pragma once

#include <strata/plugin_api.h>

#include <string_view>

namespace strata::amp {

struct PrecisionConfig {
  strata_dtype model_dtype = STRATA_F32;
};

// Validates {"fp16": {...}, "bf16": {...}} (each optional). Throws sdk::Error naming the key:
// STRATA_ERR_INVALID_ARGUMENT for malformed values or both enabled, STRATA_ERR_UNSUPPORTED when
// fp16 or bf16 is enabled (this build trains in fp32 only).
PrecisionConfig parse_precision_config(std::string_view json_text);

}  // namespace strata::amp
