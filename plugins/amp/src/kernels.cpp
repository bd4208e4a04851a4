// The element loops behind cast and grad_stats, compiled once per instruction set by Highway's
// foreach_target: the portable target (EMU128) and AVX2 and AVX3 (AVX-512 F/VL/DQ/BW). isa.cpp
// picks the set per instance; kernels_for takes its functions from the HWY_EXPORT tables.
//
// f16 conversions use the hardware's F16C instructions (Highway's DemoteTo/PromoteTo on the x86
// targets): vcvtps2ph rounds to nearest even whatever MXCSR says, turns overflow into inf and
// quiets nan keeping the top payload bits, and vcvtph2ps is exact and quiets nan: exactly
// scalar::f16_of / from_f16. bf16 narrowing is integer rounding (Highway's bf16 DemoteTo
// truncates, and AVX512_BF16's vcvtneps2bf16 flushes subnormals). The portable target runs the
// scalar reference itself (Highway's portable f16 conversions truncate and keep signalling nans).
// Calls writing 16 MiB or more use streaming stores (see stream_head in kernels.hpp).
#include <hwy/targets.h>

#include "isa.hpp"
#include "kernels.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace strata::amp::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_EMU128 || HWY_TARGET == HWY_SCALAR
inline constexpr bool kPortable = true;
#else
inline constexpr bool kPortable = false;
#endif

// Runs `vector(i)` on whole vectors of `lanes` elements and `one(i)` on the rest. Calls writing
// kStreamMinBytes or more first convert single elements until dst is aligned for `store_bytes`,
// then let `vector` stream its stores (its second argument), and fence after the loop.
template <class Out, class Vector, class One>
HWY_INLINE void Loop(Out* HWY_RESTRICT dst, size_t n, size_t lanes, size_t store_bytes,
                     const Vector& vector, const One& one) {
  size_t i = 0;
  const size_t head = stream_head(dst, n, store_bytes);
  if (head != kNoStream) {
    for (; i < head && i < n; ++i) one(i);
    for (; i + lanes <= n; i += lanes) vector(i, std::true_type());
    hwy::FlushStream();
  } else {
    for (; i + lanes <= n; i += lanes) vector(i, std::false_type());
  }
  for (; i < n; ++i) one(i);
}

template <class D, class V, class T, bool kStream>
HWY_INLINE void Put(V v, D d, T* HWY_RESTRICT p, std::integral_constant<bool, kStream>) {
  if constexpr (kStream) {
    hn::Stream(v, d, p);
  } else {
    hn::StoreU(v, d, p);
  }
}

void F32ToF16(const float* HWY_RESTRICT src, uint16_t* HWY_RESTRICT dst, size_t n) {
  if constexpr (kPortable) {
    for (size_t i = 0; i < n; ++i) dst[i] = scalar::f16_of(src[i]);
  } else {
    const hn::ScalableTag<float> df;
    const hn::Rebind<hwy::float16_t, decltype(df)> dh;
    const hn::RebindToUnsigned<decltype(dh)> du16;
    const size_t lanes = hn::Lanes(df);
    Loop(
        dst, n, lanes, lanes * sizeof(uint16_t),
        [&](size_t i, auto stream) {
          Put(hn::BitCast(du16, hn::DemoteTo(dh, hn::LoadU(df, src + i))), du16, dst + i, stream);
        },
        [&](size_t i) { dst[i] = scalar::f16_of(src[i]); });
  }
}

void F16ToF32(const uint16_t* HWY_RESTRICT src, float* HWY_RESTRICT dst, size_t n) {
  if constexpr (kPortable) {
    for (size_t i = 0; i < n; ++i) dst[i] = scalar::from_f16(src[i]);
  } else {
    const hn::ScalableTag<float> df;
    const hn::Rebind<hwy::float16_t, decltype(df)> dh;
    const hn::RebindToUnsigned<decltype(dh)> du16;
    const size_t lanes = hn::Lanes(df);
    Loop(
        dst, n, lanes, lanes * sizeof(float),
        [&](size_t i, auto stream) {
          Put(hn::PromoteTo(df, hn::BitCast(dh, hn::LoadU(du16, src + i))), df, dst + i, stream);
        },
        [&](size_t i) { dst[i] = scalar::from_f16(src[i]); });
  }
}

// Per u32 lane: nan (magnitude above the exponent mask)?
template <class DU, class V>
HWY_INLINE auto NanLanes(DU du, V x) {
  const hn::RebindToSigned<DU> di;
  const auto magnitude = hn::BitCast(di, hn::And(x, hn::Set(du, scalar::kF32AbsMask)));
  return hn::RebindMask(du, hn::Gt(magnitude, hn::Set(di, scalar::kF32ExpMask)));
}

void F32ToBF16(const float* HWY_RESTRICT src, uint16_t* HWY_RESTRICT dst, size_t n) {
  if constexpr (kPortable) {
    for (size_t i = 0; i < n; ++i) dst[i] = scalar::bf16_of(src[i]);
  } else {
    const hn::ScalableTag<uint32_t> du;
    const hn::RebindToSigned<decltype(du)> di;
    const hn::Rebind<uint16_t, decltype(du)> du16;
    const size_t lanes = hn::Lanes(du);
    Loop(
        dst, n, lanes, lanes * sizeof(uint16_t),
        [&](size_t i, auto stream) {
          const auto x = hn::LoadU(du, reinterpret_cast<const uint32_t*>(src + i));
          // Adding 0x7fff plus the lowest kept bit rounds to nearest even (a carry correctly
          // bumps the exponent); a nan is truncated with its quiet bit forced.
          const auto lsb = hn::And(hn::ShiftRight<16>(x), hn::Set(du, 1u));
          const auto rounded = hn::Add(x, hn::Add(lsb, hn::Set(du, 0x7fffu)));
          const auto quiet = hn::Or(x, hn::Set(du, scalar::kF32QuietBit));
          const auto top = hn::ShiftRight<16>(hn::IfThenElse(NanLanes(du, x), quiet, rounded));
          // Values are below 2^16, so the saturating demotion keeps them.
          Put(hn::DemoteTo(du16, hn::BitCast(di, top)), du16, dst + i, stream);
        },
        [&](size_t i) { dst[i] = scalar::bf16_of(src[i]); });
  }
}

// Widening bf16 is a shift; a signalling nan then needs its quiet bit set explicitly.
void BF16ToF32(const uint16_t* HWY_RESTRICT src, float* HWY_RESTRICT dst, size_t n) {
  if constexpr (kPortable) {
    for (size_t i = 0; i < n; ++i) dst[i] = scalar::from_bf16(src[i]);
  } else {
    const hn::ScalableTag<uint32_t> du;
    const hn::Rebind<uint16_t, decltype(du)> du16;
    const size_t lanes = hn::Lanes(du);
    auto* out = reinterpret_cast<uint32_t*>(dst);
    Loop(
        dst, n, lanes, lanes * sizeof(float),
        [&](size_t i, auto stream) {
          const auto x = hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(du16, src + i)));
          const auto quiet =
              hn::Or(x, hn::IfThenElseZero(NanLanes(du, x), hn::Set(du, scalar::kF32QuietBit)));
          Put(quiet, du, out + i, stream);
        },
        [&](size_t i) { dst[i] = scalar::from_bf16(src[i]); });
  }
}

// Adds the squares of kBlocks blocks of n floats to their own kSumLanes canonical lanes, in one
// loop (more blocks: more independent adds in flight; each block's lanes see the same additions
// in the same order whatever kBlocks is). The lanes live in kSumLanes / (doubles per vector)
// accumulators per block: acc[k][j] holds lanes j*N .. j*N+N-1 of block k.
template <size_t kBlocks>
HWY_INLINE void SquaresOfBlocks(const float* const (&values)[kBlocks], size_t n,
                                double* const (&lanes)[kBlocks]) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  constexpr size_t N = HWY_LANES(double);
  static_assert(kSumLanes % N == 0, "the canonical lanes must fill whole vectors");
  constexpr size_t kAccumulators = kSumLanes / N;
  hn::Vec<decltype(dd)> acc[kBlocks][kAccumulators];
  for (size_t k = 0; k < kBlocks; ++k) {
    for (size_t j = 0; j < kAccumulators; ++j) acc[k][j] = hn::LoadU(dd, lanes[k] + j * N);
  }
  size_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    for (size_t j = 0; j < kAccumulators; ++j) {
      for (size_t k = 0; k < kBlocks; ++k) {
        const auto x = hn::PromoteTo(dd, hn::LoadU(df, values[k] + i + j * N));
        acc[k][j] = hn::MulAdd(x, x, acc[k][j]);  // x*x is exact in fp64: a multiply, then add
      }
    }
  }
  for (size_t k = 0; k < kBlocks; ++k) {
    for (size_t j = 0; j < kAccumulators; ++j) hn::StoreU(acc[k][j], dd, lanes[k] + j * N);
    accumulate_squares_tail(values[k], i, n, lanes[k]);
  }
}

void AccumulateSquares(const float* HWY_RESTRICT values, size_t n, double* HWY_RESTRICT lanes) {
  SquaresOfBlocks<1>({values}, n, {lanes});
}

void AccumulateSquaresPair(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b, size_t n,
                           double* HWY_RESTRICT lanes_a, double* HWY_RESTRICT lanes_b) {
  SquaresOfBlocks<2>({a, b}, n, {lanes_a, lanes_b});
}

int64_t Target() { return HWY_TARGET; }

}  // namespace strata::amp::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <strata/plugin.hpp>
#include <strata_common/highway_slot.hpp>
#include <string>

namespace strata::amp {

HWY_EXPORT(F32ToF16);
HWY_EXPORT(F16ToF32);
HWY_EXPORT(F32ToBF16);
HWY_EXPORT(BF16ToF32);
HWY_EXPORT(AccumulateSquares);
HWY_EXPORT(AccumulateSquaresPair);
HWY_EXPORT(Target);

namespace {

struct Set {
  Kernels kernels;
  int64_t target;  // as the dispatched code reports it
};

Set make_set(Isa isa) {
  const size_t slot = common::cpu::highway_slot(isa);
  Set set{{HWY_DISPATCH_TABLE(F32ToF16)[slot], HWY_DISPATCH_TABLE(F16ToF32)[slot],
           HWY_DISPATCH_TABLE(F32ToBF16)[slot], HWY_DISPATCH_TABLE(BF16ToF32)[slot],
           HWY_DISPATCH_TABLE(AccumulateSquares)[slot],
           HWY_DISPATCH_TABLE(AccumulateSquaresPair)[slot]},
          HWY_DISPATCH_TABLE(Target)[slot]()};
  common::cpu::check_target(isa, set.target, "strata_amp's kernels");
  return set;
}

const Set& set_for(Isa isa) { return common::cpu::set_per_isa<Set>(isa, make_set); }

}  // namespace

const Kernels& kernels_for(Isa isa) { return set_for(isa).kernels; }
int64_t kernels_target(Isa isa) { return set_for(isa).target; }
const Kernels& portable_kernels() { return kernels_for(Isa::scalar); }

}  // namespace strata::amp
#endif  // HWY_ONCE
