// The one-element rules of the shared-memory reductions, and the plain reference loop built from
// them. The vector kernels (shm_kernels.cpp) reproduce these rules lane by lane and call
// reduce_reference for the elements after their last whole vector.
//
// The rules equal the MPI path's (the SDK's strata/comm/half_arrays.hpp and reduce_ops.hpp): halves
// widen to f32, fold there and narrow once; AVG divides the folded value as divide_in_place does.
// Where the MPI path leaves a choice to the compiler, a rule fixes it so that every instruction set
// agrees:
//  - SUM of floats: acc + s, except that once acc is a NaN it stays (made quiet, as x86 addition
//    makes it). The hardware returns the first operand's NaN when both are NaN, but a compiler may
//    swap the operands of a commutative add, so "acc + s" alone does not say which NaN comes out.
//  - MIN/MAX of floats: the first NaN in source order wins (its bits unchanged); on a tie (+0 and
//    -0) the earlier source is kept.
//  - Integers wrap around (the sum is done in the unsigned type).
#pragma once

#include <strata/comm/half_arrays.hpp>
#include <strata/half.hpp>
#include <strata/plugin_api.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "shm_kernels.hpp"

namespace strata::common::shm {

using sdk::comm::f32_to_half;
using sdk::comm::half_to_f32;
using sdk::comm::widen_f16;

namespace rule {

template <class F>
inline F float_sum(F acc, F s) {
  // acc + acc quiets a NaN acc whichever operand order the compiler picks.
  return acc + (acc != acc ? acc : s);
}
template <class F>
inline F float_max(F acc, F s) {
  return acc != acc ? acc : (s != s || s > acc) ? s : acc;
}
template <class F>
inline F float_min(F acc, F s) {
  return acc != acc ? acc : (s != s || s < acc) ? s : acc;
}

template <class I>
inline I wrapping_sum(I acc, I s) {
  using U = std::make_unsigned_t<I>;
  return static_cast<I>(static_cast<U>(static_cast<U>(acc) + static_cast<U>(s)));
}

// One fold step of `op` (AVG folds as SUM).
template <class A>
inline A step(int32_t op, A acc, A s) {
  if constexpr (std::is_floating_point_v<A>) {
    if (op == STRATA_MIN) return float_min(acc, s);
    if (op == STRATA_MAX) return float_max(acc, s);
    return float_sum(acc, s);
  } else {
    if (op == STRATA_MIN) return s < acc ? s : acc;
    if (op == STRATA_MAX) return s > acc ? s : acc;
    return wrapping_sum(acc, s);
  }
}

// Whether AVG's division by this divisor is a multiplication by its exact reciprocal (a power of
// two: both round the same real number once), as the SDK's divide_in_place decides.
inline bool divides_by_reciprocal(int divisor) { return (divisor & (divisor - 1)) == 0; }

// AVG's division of the folded value, for divisor > 1 (integers: truncating).
template <class A>
inline A divide(A v, int divisor) {
  const A d = static_cast<A>(divisor);
  if constexpr (std::is_floating_point_v<A>) {
    if (divides_by_reciprocal(divisor)) return v * (A(1) / d);
  }
  return static_cast<A>(v / d);
}

}  // namespace rule

// How elements of each dtype enter the accumulation type A and leave it.
template <int32_t kDtype>
struct Element;
template <>
struct Element<STRATA_F32> {
  using Stored = float;
  using A = float;
  static A widen(Stored v) { return v; }
  static Stored narrow(A v) { return v; }
};
template <>
struct Element<STRATA_F64> {
  using Stored = double;
  using A = double;
  static A widen(Stored v) { return v; }
  static Stored narrow(A v) { return v; }
};
template <>
struct Element<STRATA_F16> {
  using Stored = uint16_t;
  using A = float;
  static A widen(Stored v) { return widen_f16(v); }  // quiets signalling NaNs, as F16C does
  static Stored narrow(A v) { return float_to_f16(v); }
};
template <>
struct Element<STRATA_BF16> {
  using Stored = uint16_t;
  using A = float;
  static A widen(Stored v) { return bf16_to_float(v); }
  static Stored narrow(A v) { return float_to_bf16(v); }
};
template <class I>
struct IntElement {
  using Stored = I;
  using A = I;
  static A widen(Stored v) { return v; }
  static Stored narrow(A v) { return v; }
};
template <>
struct Element<STRATA_I32> : IntElement<int32_t> {};
template <>
struct Element<STRATA_I64> : IntElement<int64_t> {};
template <>
struct Element<STRATA_U8> : IntElement<uint8_t> {};

// Elements [begin, end) of the reduction, one at a time. Throws sdk::Error (STRATA_ERR_INTERNAL)
// for an unknown dtype or op or n_sources < 1.
void reduce_reference(const ReduceArgs& args, size_t begin, size_t end);

}  // namespace strata::common::shm
