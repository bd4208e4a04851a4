// Strata dtypes and reduce ops as Gloo reduce functions. Gloo's reduce function is type-erased
// (out[i] = a[i] op b[i] over n elements), so every dtype works; f16 and bf16 are widened to f32
// first (strata/comm/half_arrays.hpp) and reduced as f32, as allreduce-mpi does, so halves round
// once. The plugin-neutral helpers (op names, AVG's division) are the SDK's
// (strata/comm/reduce_ops.hpp).
#pragma once

#include <strata/comm/half_arrays.hpp>
#include <strata/comm/reduce_ops.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace strata::allreduce_gloo {

using ReduceFn = std::function<void(void*, const void*, const void*, size_t)>;

using namespace sdk::comm;

// The reduction of `op` on elements of `dtype` (not a half); AVG reduces as SUM.
ReduceFn reduce_function(int32_t dtype, int32_t op);

}  // namespace strata::allreduce_gloo
