// AVX2 + F16C kernels, compiled for those extensions function by function (target attributes) so
// the plugin stays one binary for every x86-64; isa.cpp only hands them out where the CPU has both.
// Large calls use streaming stores (see stream_head in kernels.hpp).
#include <immintrin.h>

#include <bit>

#include "half_bits.hpp"
#include "kernels.hpp"

#define STRATA_AVX2 __attribute__((target("avx2,f16c")))

namespace strata::amp {
namespace {

uint16_t f16_of(float f) { return bits::f32_to_f16(std::bit_cast<uint32_t>(f)); }
uint16_t bf16_of(float f) { return bits::f32_to_bf16(std::bit_cast<uint32_t>(f)); }
float from_f16(uint16_t h) { return std::bit_cast<float>(bits::f16_to_f32(h)); }
float from_bf16(uint16_t b) { return std::bit_cast<float>(bits::bf16_to_f32(b)); }

STRATA_AVX2 void store(__m128i* p, __m128i v, bool stream) {
  if (stream) {
    _mm_stream_si128(p, v);
  } else {
    _mm_storeu_si128(p, v);
  }
}
STRATA_AVX2 void store(__m256i* p, __m256i v, bool stream) {
  if (stream) {
    _mm256_stream_si256(p, v);
  } else {
    _mm256_storeu_si256(p, v);
  }
}

// 8 floats -> 8 halves. vcvtps2ph with immediate 0 rounds to nearest even whatever MXCSR says,
// turns overflow into inf and quiets nan keeping the top payload bits: exactly bits::f32_to_f16.
STRATA_AVX2 void f32_to_f16(const float* src, uint16_t* dst, std::size_t n) {
  const std::size_t head = stream_head(dst, n, 16);
  const bool stream = head != kNoStream;
  std::size_t i = 0;
  for (; stream && i < head && i < n; ++i) dst[i] = f16_of(src[i]);
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    store(reinterpret_cast<__m128i*>(dst + i), h, stream);
  }
  if (stream) _mm_sfence();
  for (; i < n; ++i) dst[i] = f16_of(src[i]);
}

// vcvtph2ps is exact for every half and turns a signalling nan into a quiet one, as
// bits::f16_to_f32 does.
STRATA_AVX2 void f16_to_f32(const uint16_t* src, float* dst, std::size_t n) {
  const std::size_t head = stream_head(dst, n, 32);
  const bool stream = head != kNoStream;
  std::size_t i = 0;
  for (; stream && i < head && i < n; ++i) dst[i] = from_f16(src[i]);
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    store(reinterpret_cast<__m256i*>(dst + i), _mm256_castps_si256(_mm256_cvtph_ps(h)), stream);
  }
  if (stream) _mm_sfence();
  for (; i < n; ++i) dst[i] = from_f16(src[i]);
}

STRATA_AVX2 __m256i splat(uint32_t v) { return _mm256_set1_epi32(static_cast<int>(v)); }

// bits::f32_to_bf16 on 8 lanes, leaving each result in the low half of its 32-bit lane.
STRATA_AVX2 __m256i round_to_bf16(__m256i x) {
  const __m256i abs = _mm256_and_si256(x, splat(bits::kF32AbsMask));
  const __m256i is_nan = _mm256_cmpgt_epi32(abs, splat(bits::kF32ExpMask));
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), splat(1));
  const __m256i rounded = _mm256_add_epi32(x, _mm256_add_epi32(lsb, splat(0x7fff)));
  const __m256i quiet = _mm256_or_si256(x, splat(bits::kF32QuietBit));
  return _mm256_srli_epi32(_mm256_blendv_epi8(rounded, quiet, is_nan), 16);
}

STRATA_AVX2 void f32_to_bf16(const float* src, uint16_t* dst, std::size_t n) {
  const std::size_t head = stream_head(dst, n, 32);
  const bool stream = head != kNoStream;
  std::size_t i = 0;
  for (; stream && i < head && i < n; ++i) dst[i] = bf16_of(src[i]);
  for (; i + 16 <= n; i += 16) {
    const auto* in = reinterpret_cast<const __m256i*>(src + i);
    const __m256i lo = round_to_bf16(_mm256_loadu_si256(in));
    const __m256i hi = round_to_bf16(_mm256_loadu_si256(in + 1));
    // packus works within 128-bit halves: [lo0-3 hi0-3 lo4-7 hi4-7]; restore the order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);
    store(reinterpret_cast<__m256i*>(dst + i), packed, stream);
  }
  if (stream) _mm_sfence();
  for (; i < n; ++i) dst[i] = bf16_of(src[i]);
}

// Widening bf16 is a shift; a signalling nan then needs its quiet bit set explicitly.
STRATA_AVX2 void bf16_to_f32(const uint16_t* src, float* dst, std::size_t n) {
  const std::size_t head = stream_head(dst, n, 32);
  const bool stream = head != kNoStream;
  std::size_t i = 0;
  for (; stream && i < head && i < n; ++i) dst[i] = from_bf16(src[i]);
  for (; i + 8 <= n; i += 8) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m256i x = _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16);
    const __m256i is_nan =
        _mm256_cmpgt_epi32(_mm256_and_si256(x, splat(bits::kF32AbsMask)), splat(bits::kF32ExpMask));
    const __m256i quiet = _mm256_or_si256(x, _mm256_and_si256(is_nan, splat(bits::kF32QuietBit)));
    store(reinterpret_cast<__m256i*>(dst + i), quiet, stream);
  }
  if (stream) _mm_sfence();
  for (; i < n; ++i) dst[i] = from_bf16(src[i]);
}

// Lanes 0-15 live in four registers of four doubles: acc[j] holds lanes 4j..4j+3.
STRATA_AVX2 void accumulate_squares(const float* values, std::size_t n, double* lanes) {
  __m256d acc[4];
  for (int j = 0; j < 4; ++j) acc[j] = _mm256_loadu_pd(lanes + 4 * j);
  std::size_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    for (int j = 0; j < 4; ++j) {
      const __m256d x = _mm256_cvtps_pd(_mm_loadu_ps(values + i + 4 * j));
      acc[j] = _mm256_add_pd(acc[j], _mm256_mul_pd(x, x));
    }
  }
  for (int j = 0; j < 4; ++j) _mm256_storeu_pd(lanes + 4 * j, acc[j]);
  accumulate_squares_tail(values, i, n, lanes);
}

}  // namespace

const Kernels kAvx2Kernels = {f32_to_f16, f16_to_f32, f32_to_bf16, bf16_to_f32, accumulate_squares};

}  // namespace strata::amp
