// precision.cast: checks two buffer descriptors and converts src into dst element-wise.
#pragma once

#include <strata/plugin_api.h>

#include "kernels.hpp"

namespace strata::amp {

// Supported: f32 <-> f32, f64, f16, bf16. Buffers above kParallelMin elements are split over
// exec.threads threads. Both buffers on one CUDA device (ABI 1.7): the shared CUDA cast kernel,
// enqueued on `stream` (the host's), f32 <-> f16, bf16 and same-dtype copies. Throws
// sdk::Error: STRATA_ERR_INVALID_ARGUMENT for a malformed descriptor, a count mismatch or
// overlapping buffers of different dtypes, STRATA_ERR_UNSUPPORTED for another dtype pair, a
// cast between host and device memory, or device memory in a build without CUDA.
void cast(const strata_buffer& src, const strata_buffer& dst, const Exec& exec, void* stream);

}  // namespace strata::amp
