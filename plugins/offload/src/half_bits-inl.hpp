// Per-target (Highway) conversion of float lanes to the bits of IEEE half (f16) and bfloat16,
// rounded to nearest even, in integer SIMD so that every instruction set gives the same bits:
// Highway's own f16 demotion truncates on its portable target and its bf16 demotion truncates
// everywhere. Included once per target by optimizer_kernels.cpp (hence the toggle guard).
#if defined(STRATA_OFFLOAD_HALF_BITS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef STRATA_OFFLOAD_HALF_BITS_INL_H_
#undef STRATA_OFFLOAD_HALF_BITS_INL_H_
#else
#define STRATA_OFFLOAD_HALF_BITS_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace strata::offload::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// u32 lanes holding values in [0, 0xFFFF] -> u16 lanes (the demotion saturates, which never
// bites here).
template <class D>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, D>> NarrowTo16(D /*d*/,
                                                       hn::Vec<hn::RebindToUnsigned<D>> bits) {
  return hn::DemoteTo(hn::Rebind<uint16_t, D>(), hn::BitCast(hn::RebindToSigned<D>(), bits));
}

// float -> f16 bits: after F. Giesen's float_to_half_fast3_rtne, with both branches computed and
// selected per lane. NaN stays NaN (quiet), overflow becomes infinity, tiny values subnormal or 0.
template <class D>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, D>> F16Bits(D d, hn::Vec<D> v) {
  const hn::RebindToUnsigned<D> du;
  const hn::RebindToSigned<D> di;
  const auto bits = hn::BitCast(du, v);
  const auto sign = hn::And(bits, hn::Set(du, 0x80000000u));
  const auto mag = hn::Xor(bits, sign);  // |v|, non-negative as int32 too
  const auto mag_i = hn::BitCast(di, mag);
  // |v| >= 65520 (2^16 as the f16 exponent limit, before rounding): infinity or NaN.
  const auto too_big = hn::RebindMask(du, hn::Gt(mag_i, hn::Set(di, ((127 + 16) << 23) - 1)));
  const auto is_nan = hn::RebindMask(du, hn::Gt(mag_i, hn::Set(di, 0x7F800000)));
  const auto inf_or_nan = hn::IfThenElse(is_nan, hn::Set(du, 0x7E00u), hn::Set(du, 0x7C00u));
  // Subnormal results: adding a magic float aligns the 10 mantissa bits at the bottom, and the
  // FPU's own round-to-nearest-even does the rounding.
  constexpr uint32_t kMagicBits = ((127 - 15) + (23 - 10) + 1) << 23;
  const auto magic = hn::Set(du, kMagicBits);
  const auto shifted = hn::Add(hn::BitCast(d, mag), hn::BitCast(d, magic));
  const auto subnormal = hn::Sub(hn::BitCast(du, shifted), magic);
  // Normal results: rebias the exponent, add half an ulp minus one plus the kept bit's parity.
  const auto odd = hn::And(hn::ShiftRight<13>(mag), hn::Set(du, 1u));
  constexpr uint32_t kRebias = (15u - 127u) << 23;  // wraps: adds -112 to the exponent
  const auto normal = hn::ShiftRight<13>(hn::Add(hn::Add(mag, hn::Set(du, kRebias + 0xFFFu)), odd));
  const auto is_subnormal = hn::RebindMask(du, hn::Lt(mag_i, hn::Set(di, 113 << 23)));
  auto h = hn::IfThenElse(is_subnormal, subnormal, normal);
  h = hn::IfThenElse(too_big, inf_or_nan, h);
  return NarrowTo16(d, hn::Or(h, hn::ShiftRight<16>(sign)));
}

// float -> bfloat16 bits: add 0x7FFF plus the parity of the kept bit, then keep the top half.
// NaN is kept quiet rather than rounded (rounding could carry it into infinity).
template <class D>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, D>> Bf16Bits(D d, hn::Vec<D> v) {
  const hn::RebindToUnsigned<D> du;
  const hn::RebindToSigned<D> di;
  const auto bits = hn::BitCast(du, v);
  const auto top = hn::ShiftRight<16>(bits);
  const auto odd = hn::And(top, hn::Set(du, 1u));
  const auto rounded = hn::ShiftRight<16>(hn::Add(hn::Add(bits, hn::Set(du, 0x7FFFu)), odd));
  const auto mag_i = hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu)));
  const auto is_nan = hn::RebindMask(du, hn::Gt(mag_i, hn::Set(di, 0x7F800000)));
  return NarrowTo16(d, hn::IfThenElse(is_nan, hn::Or(top, hn::Set(du, 0x40u)), rounded));
}

}  // namespace strata::offload::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // STRATA_OFFLOAD_HALF_BITS_INL_H_ toggle
