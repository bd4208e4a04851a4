// The shared-memory reductions' vector loops, compiled once per instruction set by Highway's
// foreach_target: the portable target (EMU128), AVX2 and AVX3 (AVX-512 F/VL/DQ/BW). shm_isa.cpp
// picks the set per instance; kernels_for takes its function from the HWY_EXPORT table.
//
// Floats: each step loads one vector of every source and folds them into an accumulator kept in
// registers (four independent accumulators per step, so the chains of dependent adds overlap),
// then divides (AVG), narrows and stores once: every byte is read and written once, whatever
// n_sources is. Lanes follow the rules of shm_reference.hpp, whose reference loop does the tail.
//
// f16 widening and narrowing use F16C (Highway's PromoteTo/DemoteTo on the x86 targets):
// vcvtph2ps is exact and quiets NaN (= widen_f16), vcvtps2ph rounds to nearest even whatever MXCSR
// says and quiets NaN keeping the top payload bits (= float_to_f16). bf16 narrowing is integer
// rounding (Highway's bf16 DemoteTo truncates). The portable target converts f16 with the scalar
// functions (Highway's portable f16 conversions truncate and keep signalling NaNs).
//
// Integers run plain loops in blocks that stay in L1, which -O3 vectorises for each target.
#include <hwy/targets.h>

#include <strata_common/shm_kernels.hpp>
#include <strata_common/shm_reference.hpp>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shm_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace strata::common::shm::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_EMU128 || HWY_TARGET == HWY_SCALAR
inline constexpr bool kPortable = true;
#else
inline constexpr bool kPortable = false;
#endif

// How each floating dtype's elements are loaded into accumulator vectors and stored from them.
template <class T>
struct SameIo {
  using Stored = T;
  using D = hn::ScalableTag<T>;
  static HWY_INLINE hn::Vec<D> Load(D d, const Stored* p) { return hn::LoadU(d, p); }
  static HWY_INLINE void Store(D d, hn::Vec<D> v, Stored* p) { hn::StoreU(v, d, p); }
};

struct F16Io {
  using Stored = uint16_t;
  using D = hn::ScalableTag<float>;
  static HWY_INLINE hn::Vec<D> Load(D d, const Stored* p) {
    if constexpr (kPortable) {
      float wide[HWY_LANES(float)];
      for (size_t j = 0; j < hn::Lanes(d); ++j) wide[j] = widen_f16(p[j]);
      return hn::LoadU(d, wide);
    } else {
      const hn::Rebind<hwy::float16_t, D> dh;
      const hn::Rebind<uint16_t, D> du16;
      return hn::PromoteTo(d, hn::BitCast(dh, hn::LoadU(du16, p)));
    }
  }
  static HWY_INLINE void Store(D d, hn::Vec<D> v, Stored* p) {
    if constexpr (kPortable) {
      float wide[HWY_LANES(float)];
      hn::StoreU(v, d, wide);
      for (size_t j = 0; j < hn::Lanes(d); ++j) p[j] = float_to_f16(wide[j]);
    } else {
      const hn::Rebind<hwy::float16_t, D> dh;
      const hn::Rebind<uint16_t, D> du16;
      hn::StoreU(hn::BitCast(du16, hn::DemoteTo(dh, v)), du16, p);
    }
  }
};

// bf16 is the top half of an f32: widening is a shift (keeping NaN bits, as bf16_to_float does).
struct BF16Io {
  using Stored = uint16_t;
  using D = hn::ScalableTag<float>;
  static HWY_INLINE hn::Vec<D> Load(D d, const Stored* p) {
    const hn::RebindToUnsigned<D> du;
    const hn::Rebind<uint16_t, D> du16;
    return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(du16, p))));
  }
  static HWY_INLINE void Store(D /*d*/, hn::Vec<D> v, Stored* p) {
    const hn::RebindToUnsigned<D> du;
    const hn::RebindToSigned<D> di;
    const hn::Rebind<uint16_t, D> du16;
    const auto x = hn::BitCast(du, v);
    // float_to_bf16: adding 0x7fff plus the lowest kept bit rounds to nearest even (a carry
    // correctly bumps the exponent); a NaN is truncated with its quiet bit forced.
    const auto lsb = hn::And(hn::ShiftRight<16>(x), hn::Set(du, 1u));
    const auto rounded = hn::Add(x, hn::Add(lsb, hn::Set(du, 0x7fffu)));
    const auto quiet = hn::Or(x, hn::Set(du, 0x00400000u));
    const auto nan = hn::RebindMask(du, hn::IsNaN(v));
    const auto top = hn::ShiftRight<16>(hn::IfThenElse(nan, quiet, rounded));
    // Values are below 2^16, so the saturating demotion keeps them.
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, top)), du16, p);
  }
};

// One fold step of kOp, lane by lane, as rule::step does it.
template <int32_t kOp, class V>
HWY_INLINE V Step(V acc, V s) {
  const auto acc_nan = hn::IsNaN(acc);
  if constexpr (kOp == STRATA_SUM || kOp == STRATA_AVG) {
    return hn::Add(acc, hn::IfThenElse(acc_nan, acc, s));  // see rule::float_sum
  } else {
    const auto better = kOp == STRATA_MAX ? hn::Gt(s, acc) : hn::Lt(s, acc);
    return hn::IfThenElse(hn::AndNot(acc_nan, hn::Or(better, hn::IsNaN(s))), s, acc);
  }
}

// Folds vectors [i, i + kUnroll * N) of every source, divides (AVG) and stores. All sources are
// read before the stores, so out may alias a source.
template <class Io, int32_t kOp, size_t kUnroll, class D, class V>
HWY_INLINE void FoldVectors(D d, const ReduceArgs& a, size_t i, bool divide, bool multiply,
                            V factor) {
  using Stored = typename Io::Stored;
  const size_t N = hn::Lanes(d);
  const auto* const* src = reinterpret_cast<const Stored* const*>(a.sources);
  V acc[kUnroll];
  for (size_t u = 0; u < kUnroll; ++u) acc[u] = Io::Load(d, src[0] + i + u * N);
  for (int k = 1; k < a.n_sources; ++k) {
    const Stored* s = src[k] + i;
    for (size_t u = 0; u < kUnroll; ++u) acc[u] = Step<kOp>(acc[u], Io::Load(d, s + u * N));
  }
  for (size_t u = 0; u < kUnroll; ++u) {
    V result = acc[u];
    if (divide) result = multiply ? hn::Mul(result, factor) : hn::Div(result, factor);
    Io::Store(d, result, static_cast<Stored*>(a.out) + i + u * N);
    if (a.out2 != nullptr) Io::Store(d, result, static_cast<Stored*>(a.out2) + i + u * N);
  }
}

template <class Io, int32_t kOp>
HWY_NOINLINE void ReduceFloats(const ReduceArgs& a) {
  using D = typename Io::D;
  using A = hn::TFromD<D>;
  const D d;
  const size_t N = hn::Lanes(d);
  const bool divide = kOp == STRATA_AVG && a.divisor > 1;
  const bool multiply = divide && rule::divides_by_reciprocal(a.divisor);
  const auto factor =
      hn::Set(d, multiply ? A(1) / static_cast<A>(a.divisor) : static_cast<A>(a.divisor));
  constexpr size_t kUnroll = 4;
  size_t i = 0;
  for (; i + kUnroll * N <= a.count; i += kUnroll * N) {
    FoldVectors<Io, kOp, kUnroll>(d, a, i, divide, multiply, factor);
  }
  for (; i + N <= a.count; i += N) FoldVectors<Io, kOp, 1>(d, a, i, divide, multiply, factor);
  reduce_reference(a, i, a.count);
}

// Integers: blocks of kBlock elements accumulate in an L1-resident array, one simple loop per
// source (which the compiler vectorises), so memory is still read and written once.
template <int32_t kDtype, int32_t kOp>
HWY_NOINLINE void ReduceInts(const ReduceArgs& a) {
  using T = typename Element<kDtype>::Stored;
  constexpr size_t kBlock = 512;
  const auto* const* src = reinterpret_cast<const T* const*>(a.sources);
  auto* out = static_cast<T*>(a.out);
  auto* out2 = static_cast<T*>(a.out2);
  const bool divide = kOp == STRATA_AVG && a.divisor > 1;
  T acc[kBlock];
  for (size_t i = 0; i < a.count; i += kBlock) {
    const size_t m = a.count - i < kBlock ? a.count - i : kBlock;
    for (size_t j = 0; j < m; ++j) acc[j] = src[0][i + j];
    for (int k = 1; k < a.n_sources; ++k) {
      const T* s = src[k] + i;
      for (size_t j = 0; j < m; ++j) acc[j] = rule::step(kOp, acc[j], s[j]);
    }
    if (divide) {
      for (size_t j = 0; j < m; ++j) acc[j] = rule::divide(acc[j], a.divisor);
    }
    for (size_t j = 0; j < m; ++j) out[i + j] = acc[j];
    if (out2 != nullptr) {
      for (size_t j = 0; j < m; ++j) out2[i + j] = acc[j];
    }
  }
}

// Instantiates Kernel<..., op> for the run-time op.
template <template <int32_t> class Kernel>
HWY_INLINE void ForOp(const ReduceArgs& a) {
  switch (a.op) {
    case STRATA_SUM: return Kernel<STRATA_SUM>::Run(a);
    case STRATA_AVG: return Kernel<STRATA_AVG>::Run(a);
    case STRATA_MIN: return Kernel<STRATA_MIN>::Run(a);
    default: return Kernel<STRATA_MAX>::Run(a);
  }
}
template <class Io>
struct FloatKernel {
  template <int32_t kOp>
  struct Of {
    static void Run(const ReduceArgs& a) { ReduceFloats<Io, kOp>(a); }
  };
};
template <int32_t kDtype>
struct IntKernel {
  template <int32_t kOp>
  struct Of {
    static void Run(const ReduceArgs& a) { ReduceInts<kDtype, kOp>(a); }
  };
};

void Reduce(const ReduceArgs& a) {
  if (a.n_sources < 1 || a.op < STRATA_SUM || a.op > STRATA_MAX) {
    return reduce_reference(a, 0, a.count);  // throws, saying what is wrong
  }
  switch (a.dtype) {
    case STRATA_F32: return ForOp<FloatKernel<SameIo<float>>::Of>(a);
    case STRATA_F64: return ForOp<FloatKernel<SameIo<double>>::Of>(a);
    case STRATA_F16: return ForOp<FloatKernel<F16Io>::Of>(a);
    case STRATA_BF16: return ForOp<FloatKernel<BF16Io>::Of>(a);
    case STRATA_I32: return ForOp<IntKernel<STRATA_I32>::Of>(a);
    case STRATA_I64: return ForOp<IntKernel<STRATA_I64>::Of>(a);
    case STRATA_U8: return ForOp<IntKernel<STRATA_U8>::Of>(a);
    default: return reduce_reference(a, 0, a.count);  // throws: unknown dtype
  }
}

int64_t Target() { return HWY_TARGET; }

}  // namespace strata::common::shm::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <strata/plugin.hpp>
#include <strata_common/highway_slot.hpp>

#include <string>

namespace strata::common::shm {

HWY_EXPORT(Reduce);
HWY_EXPORT(Target);

namespace {

Kernels make_kernels(Isa isa) {
  const size_t slot = common::cpu::highway_slot(isa);
  common::cpu::check_target(isa, HWY_DISPATCH_TABLE(Target)[slot](),
                            "the shared-memory group's kernels");
  return Kernels{HWY_DISPATCH_TABLE(Reduce)[slot]};
}

}  // namespace

const Kernels& kernels_for(Isa isa) { return common::cpu::set_per_isa<Kernels>(isa, make_kernels); }

}  // namespace strata::common::shm
#endif  // HWY_ONCE
