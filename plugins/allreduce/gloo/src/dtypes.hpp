// Strata dtypes and reduce ops as Gloo reduce functions. Gloo's reduce function is type-erased
// (out[i] = a[i] op b[i] over n elements), so every dtype works; f16 and bf16 are widened to f32
// first (half_arrays.hpp) and reduced as f32, as allreduce-mpi does, so halves round once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace strata::allreduce_gloo {

using ReduceFn = std::function<void(void*, const void*, const void*, size_t)>;

bool is_half(int32_t dtype);
// The dtype the arithmetic is done in: f32 for halves, the dtype itself otherwise.
int32_t accumulate_dtype(int32_t dtype);
bool is_known_op(int32_t op);
const char* op_name(int32_t op);
// The reduction of `op` on elements of `dtype` (not a half); AVG reduces as SUM.
ReduceFn reduce_function(int32_t dtype, int32_t op);
// data[i] /= divisor for `count` elements of a non-half dtype (integers: truncating division).
void divide_in_place(void* data, size_t count, int32_t dtype, int divisor);

}  // namespace strata::allreduce_gloo
