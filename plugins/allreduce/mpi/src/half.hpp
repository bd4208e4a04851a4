// Portable f16 / bf16 <-> f32 conversions (bit manipulation, no compiler extensions).
// f32 -> 16-bit rounds to nearest, ties to even; inf stays inf, NaN stays a (quiet) NaN with its
// sign. Used so that half-precision reductions can accumulate in f32.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::allreduce_mpi {

uint16_t f32_to_f16(float value);
float f16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);
float bf16_to_f32(uint16_t bits);

// Whole-array forms. `dtype` is STRATA_F16 or STRATA_BF16.
void half_to_f32(int32_t dtype, const void* src, float* dst, size_t count);
void f32_to_half(int32_t dtype, const float* src, void* dst, size_t count);

}  // namespace strata::allreduce_mpi
