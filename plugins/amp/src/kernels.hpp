// The element loops behind cast and grad_stats. kernels.cpp compiles them once per instruction set
// with Highway (foreach_target); isa.cpp picks one set per instance. Every set gives bit-identical
// results: conversions follow the SDK's scalar reference (strata/half.hpp, with widened nans made
// quiet, see below), and sums of squares use the canonical lane layout below, so the choice of
// instruction set (and of thread count) never changes a number.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <strata/half.hpp>

namespace strata::amp {

// Sums of squares accumulate in kSumLanes fp64 lanes: element i of a block goes to lane
// i % kSumLanes. Squares of floats are exact in fp64, so a fused multiply-add and a multiply then
// add give the same lane values; only the (fixed) order of additions matters.
inline constexpr std::size_t kSumLanes = 16;

struct Kernels {
  void (*f32_to_f16)(const float* src, uint16_t* dst, std::size_t n);
  void (*f16_to_f32)(const uint16_t* src, float* dst, std::size_t n);
  void (*f32_to_bf16)(const float* src, uint16_t* dst, std::size_t n);
  void (*bf16_to_f32)(const uint16_t* src, float* dst, std::size_t n);
  // Adds values[i]^2 into lanes[i % kSumLanes] for i < n.
  void (*accumulate_squares)(const float* values, std::size_t n, double* lanes);
  // accumulate_squares(a, n, lanes_a) and accumulate_squares(b, n, lanes_b) in one loop: every
  // lane adds in the same order (so the same bits), but the two blocks' chains of dependent adds
  // interleave, hiding the add latency that bounds one block alone.
  void (*accumulate_squares_pair)(const float* a, const float* b, std::size_t n, double* lanes_a,
                                  double* lanes_b);
};

// The portable (Highway EMU128) set, which every CPU runs; the default of Exec.
const Kernels& portable_kernels();

// How an instance runs its loops: which kernel set, on how many threads at most.
struct Exec {
  const Kernels* kernels = &portable_kernels();
  unsigned threads = 1;
};

// One-element conversions: the SDK's reference, except that widening also makes a signalling nan
// quiet (keeping its sign and payload), as the F16C instruction vcvtph2ps does; the SDK keeps the
// bits as they are. The vector loops reproduce these bit for bit and use them for their tails.
namespace scalar {

inline constexpr uint32_t kF32ExpMask = 0x7f800000u;
inline constexpr uint32_t kF32AbsMask = 0x7fffffffu;
inline constexpr uint32_t kF32QuietBit = 0x00400000u;

inline float quieted(float f) {
  const auto u = std::bit_cast<uint32_t>(f);
  return (u & kF32AbsMask) > kF32ExpMask ? std::bit_cast<float>(u | kF32QuietBit) : f;
}
inline uint16_t f16_of(float f) { return float_to_f16(f); }
inline uint16_t bf16_of(float f) { return float_to_bf16(f); }
inline float from_f16(uint16_t h) { return quieted(f16_to_float(h)); }
inline float from_bf16(uint16_t b) { return quieted(bf16_to_float(b)); }

}  // namespace scalar

// Streaming (non-temporal) stores pay off when one call writes far more than the caches hold:
// the destination's lines are not read first and do not evict the source. They need aligned
// addresses, so a streaming loop starts after a few scalar elements.
inline constexpr std::size_t kStreamMinBytes = std::size_t{16} << 20;
inline constexpr std::size_t kNoStream = std::numeric_limits<std::size_t>::max();

// How many leading elements to convert one by one before dst is `align`-byte aligned, or
// kNoStream when this call should use ordinary stores.
template <class T>
std::size_t stream_head(const T* dst, std::size_t n, std::size_t align) {
  const auto address = reinterpret_cast<std::uintptr_t>(dst);
  if (n * sizeof(T) < kStreamMinBytes || address % sizeof(T) != 0) return kNoStream;
  return (align - address % align) % align / sizeof(T);
}

// Lane i of the first `done` elements' squares is already in lanes; adds the rest (the tail a
// vector loop left) with the canonical layout.
inline void accumulate_squares_tail(const float* values, std::size_t done, std::size_t n,
                                    double* lanes) {
  for (std::size_t i = done; i < n; ++i) {
    const double x = values[i];
    lanes[i % kSumLanes] += x * x;
  }
}

// Folds the lanes in a fixed pairwise order (lane k += lane k + width/2, halving the width).
inline double reduce_lanes(double* lanes) {
  for (std::size_t width = kSumLanes / 2; width >= 1; width /= 2) {
    for (std::size_t k = 0; k < width; ++k) lanes[k] += lanes[k + width];
  }
  return lanes[0];
}

}  // namespace strata::amp
