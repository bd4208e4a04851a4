// precision.cast: checks two buffer descriptors and converts src into dst element-wise.
#pragma once

#include <strata/plugin_api.h>

#include "kernels.hpp"

namespace strata::amp {

// Supported: f32 <-> f32, f64, f16, bf16. Buffers above kParallelMin elements are split over
// exec.threads threads. Throws sdk::Error: STRATA_ERR_INVALID_ARGUMENT for a malformed descriptor,
// a count mismatch or overlapping buffers of different dtypes, STRATA_ERR_UNSUPPORTED for another
// dtype pair or non-host memory.
void cast(const strata_buffer& src, const strata_buffer& dst, const Exec& exec);

}  // namespace strata::amp
