// Runtime logging through spdlog: every line carries the rank; level from STRATA_LOG_LEVEL
// (trace, debug, info, warn, error, off; default info).
#pragma once

#include <spdlog/spdlog.h>

namespace strata::rt {

// The runtime's logger (created on first use, rank shown as "?" until set_log_rank).
spdlog::logger& logger();
void set_log_rank(int rank);

}  // namespace strata::rt
