// Element-wise conversions between fp32 and the other float formats: round to nearest, ties to
// even; inf and nan preserved (nan stays nan, quiet, with its sign). f16 and bf16 are raw bit
// patterns in uint16_t. Portable scalar code for now.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::amp {

void f32_to_f16(const float* src, uint16_t* dst, std::size_t n);
void f16_to_f32(const uint16_t* src, float* dst, std::size_t n);
void f32_to_bf16(const float* src, uint16_t* dst, std::size_t n);
void bf16_to_f32(const uint16_t* src, float* dst, std::size_t n);
void f32_to_f64(const float* src, double* dst, std::size_t n);
void f64_to_f32(const double* src, float* dst, std::size_t n);

}  // namespace strata::amp
