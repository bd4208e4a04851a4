// strata_amp's checkpoint state (ABI 1.6 save_state/load_state): the loss scaler as a JSON object,
// enough for a resumed run to scale bit for bit as an uninterrupted one.
//
//   {"format": 1, "dtype": "fp16", "mode": "dynamic", "scale": 32768.0, "hysteresis": 2,
//    "iteration": 1234, "last_overflow": 1200,
//    "config": {"initial_scale": 65536.0, "window": 1000, "hysteresis": 2,
//               "consecutive_hysteresis": false, "min_scale": 1.0},
//    "history": [[1219, 32768.0, false], ...]}
//
// "mode" is "dynamic", "static" (then "config" is {"static_scale": ...}) or "none" (fp32 and bf16:
// no scaler; the object then holds only format, dtype and mode).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "loss_scaler.hpp"
#include "config.hpp"

namespace strata::amp {

std::string save_scaler_state(const PrecisionConfig& config, const LossScaler& scaler);

// Restores `scaler` from a text save_scaler_state wrote. Refuses (sdk::Error, the scaler
// unchanged) a text that is not such an object (STRATA_ERR_INVALID_ARGUMENT, naming the key and
// what was expected) or one from another dtype or scaling mode (STRATA_ERR_MISMATCH). A different
// dynamic config (window, hysteresis, min scale) or static scale is not refused: the job's config
// rules and the counters carry over; the differences come back, one sentence each, for a warning.
std::vector<std::string> load_scaler_state(std::string_view json, const PrecisionConfig& config,
                                           LossScaler& scaler);

}  // namespace strata::amp
