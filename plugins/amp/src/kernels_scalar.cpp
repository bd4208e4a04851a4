// The portable kernels: plain loops over half_bits.hpp, for any x86-64 (and other) CPU.
#include <bit>

#include "half_bits.hpp"
#include "kernels.hpp"

namespace strata::amp {
namespace {

void f32_to_f16(const float* src, uint16_t* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = bits::f32_to_f16(std::bit_cast<uint32_t>(src[i]));
}
void f16_to_f32(const uint16_t* src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(bits::f16_to_f32(src[i]));
}
void f32_to_bf16(const float* src, uint16_t* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = bits::f32_to_bf16(std::bit_cast<uint32_t>(src[i]));
}
void bf16_to_f32(const uint16_t* src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(bits::bf16_to_f32(src[i]));
}
void accumulate_squares(const float* values, std::size_t n, double* lanes) {
  std::size_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {  // whole groups: the compiler vectorises these
    for (std::size_t k = 0; k < kSumLanes; ++k) {
      const double x = values[i + k];
      lanes[k] += x * x;
    }
  }
  accumulate_squares_tail(values, i, n, lanes);
}

}  // namespace

const Kernels kScalarKernels = {f32_to_f16, f16_to_f32, f32_to_bf16, bf16_to_f32,
                                accumulate_squares};

}  // namespace strata::amp
