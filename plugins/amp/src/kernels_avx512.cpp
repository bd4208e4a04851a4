// AVX-512 (AVX512F only) kernels, compiled for it function by function like kernels_avx2.cpp,
// with the same streaming stores for large calls.
//
// The bf16 narrowing deliberately does integer rounding instead of AVX512_BF16's vcvtneps2bf16:
// that instruction treats subnormal inputs as zero and flushes subnormal results regardless of
// MXCSR, so it would not round f32 subnormals to nearest even; the integer form costs a handful of
// ALU operations per 16 elements on a loop that is bound by memory anyway. AVX512_FP16's
// vcvtps2phx rounds exactly like AVX512F's vcvtps2ph used here, so it would add nothing.
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wmaybe-uninitialized
// misreports once inlined (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <bit>

#include "half_bits.hpp"
#include "kernels.hpp"

#define STRATA_AVX512 __attribute__((target("avx512f,avx2,f16c")))

namespace strata::amp {
namespace {

STRATA_AVX512 __m512i splat(uint32_t v) { return _mm512_set1_epi32(static_cast<int>(v)); }

uint16_t f16_of(float f) { return bits::f32_to_f16(std::bit_cast<uint32_t>(f)); }
uint16_t bf16_of(float f) { return bits::f32_to_bf16(std::bit_cast<uint32_t>(f)); }
float from_f16(uint16_t h) { return std::bit_cast<float>(bits::f16_to_f32(h)); }
float from_bf16(uint16_t b) { return std::bit_cast<float>(bits::bf16_to_f32(b)); }

STRATA_AVX512 void store(void* p, __m256i v, bool stream) {
  if (stream) {
    _mm256_stream_si256(static_cast<__m256i*>(p), v);
  } else {
    _mm256_storeu_si256(static_cast<__m256i*>(p), v);
  }
}
STRATA_AVX512 void store(void* p, __m512i v, bool stream) {
  if (stream) {
    _mm512_stream_si512(static_cast<__m512i*>(p), v);
  } else {
    _mm512_storeu_si512(p, v);
  }
}

STRATA_AVX512 void f32_to_f16(const float* src, uint16_t* dst, std::size_t n) {
  const std::size_t head = stream_head(dst, n, 32);
  const bool stream = head != kNoStream;
  std::size_t i = 0;
  for (; stream && i < head && i < n; ++i) dst[i] = f16_of(src[i]);
  for (; i + 16 <= n; i += 16) {
    const __m256i h =
        _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    store(dst + i, h, stream);
  }
  if (stream) _mm_sfence();
  for (; i < n; ++i) dst[i] = f16_of(src[i]);
}

// vcvtph2ps is exact and quiets nans, as in kernels_avx2.cpp.
STRATA_AVX512 void f16_to_f32(const uint16_t* src, float* dst, std::size_t n) {
  const std::size_t head = stream_head(dst, n, 64);
  const bool stream = head != kNoStream;
  std::size_t i = 0;
  for (; stream && i < head && i < n; ++i) dst[i] = from_f16(src[i]);
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    store(dst + i, _mm512_castps_si512(_mm512_cvtph_ps(h)), stream);
  }
  if (stream) _mm_sfence();
  for (; i < n; ++i) dst[i] = from_f16(src[i]);
}

STRATA_AVX512 __mmask16 nan_lanes(__m512i x) {
  return _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, splat(bits::kF32AbsMask)),
                                 splat(bits::kF32ExpMask));
}

STRATA_AVX512 void f32_to_bf16(const float* src, uint16_t* dst, std::size_t n) {
  const std::size_t head = stream_head(dst, n, 32);
  const bool stream = head != kNoStream;
  std::size_t i = 0;
  for (; stream && i < head && i < n; ++i) dst[i] = bf16_of(src[i]);
  for (; i + 16 <= n; i += 16) {
    const __m512i x = _mm512_loadu_si512(src + i);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), splat(1));
    const __m512i rounded = _mm512_add_epi32(x, _mm512_add_epi32(lsb, splat(0x7fff)));
    const __m512i quiet = _mm512_or_si512(x, splat(bits::kF32QuietBit));
    const __m512i r = _mm512_srli_epi32(_mm512_mask_blend_epi32(nan_lanes(x), rounded, quiet), 16);
    store(dst + i, _mm512_cvtepi32_epi16(r), stream);
  }
  if (stream) _mm_sfence();
  for (; i < n; ++i) dst[i] = bf16_of(src[i]);
}

// Widening bf16 is a shift; a signalling nan then needs its quiet bit set explicitly.
STRATA_AVX512 void bf16_to_f32(const uint16_t* src, float* dst, std::size_t n) {
  const std::size_t head = stream_head(dst, n, 64);
  const bool stream = head != kNoStream;
  std::size_t i = 0;
  for (; stream && i < head && i < n; ++i) dst[i] = from_bf16(src[i]);
  for (; i + 16 <= n; i += 16) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m512i x = _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16);
    store(dst + i, _mm512_mask_or_epi32(x, nan_lanes(x), x, splat(bits::kF32QuietBit)), stream);
  }
  if (stream) _mm_sfence();
  for (; i < n; ++i) dst[i] = from_bf16(src[i]);
}

// Lanes 0-7 in lo, 8-15 in hi.
STRATA_AVX512 void accumulate_squares(const float* values, std::size_t n, double* lanes) {
  __m512d lo = _mm512_loadu_pd(lanes), hi = _mm512_loadu_pd(lanes + 8);
  std::size_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    const __m512d a = _mm512_cvtps_pd(_mm256_loadu_ps(values + i));
    const __m512d b = _mm512_cvtps_pd(_mm256_loadu_ps(values + i + 8));
    lo = _mm512_add_pd(lo, _mm512_mul_pd(a, a));
    hi = _mm512_add_pd(hi, _mm512_mul_pd(b, b));
  }
  _mm512_storeu_pd(lanes, lo);
  _mm512_storeu_pd(lanes + 8, hi);
  accumulate_squares_tail(values, i, n, lanes);
}

}  // namespace

const Kernels kAvx512Kernels = {f32_to_f16, f16_to_f32, f32_to_bf16, bf16_to_f32,
                                accumulate_squares};

}  // namespace strata::amp
