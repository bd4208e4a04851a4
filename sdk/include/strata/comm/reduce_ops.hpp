// strata/comm/reduce_ops.hpp — header-only dtype and reduce-op helpers for comm plugins: which
// dtypes accumulate in f32, the names and range of strata_reduce_op, and AVG's final division.
// All functions are pure or write only the caller's buffer, so they are thread-safe on disjoint
// data. C++17 or later.
#pragma once

#include <strata/plugin.hpp>
#include <strata/plugin_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <limits>
#include <type_traits>

namespace strata::sdk::comm {

// f16 and bf16: reduced as f32 in a scratch buffer (strata/comm/half_arrays.hpp).
inline bool is_half(int32_t dtype) { return dtype == STRATA_F16 || dtype == STRATA_BF16; }

// The dtype the arithmetic is done in: f32 for halves, the dtype itself otherwise.
inline int32_t accumulate_dtype(int32_t dtype) { return is_half(dtype) ? STRATA_F32 : dtype; }

// SUM, AVG, MIN or MAX.
inline bool is_known_op(int32_t op) { return op >= STRATA_SUM && op <= STRATA_MAX; }

// "SUM", "AVG", "MIN", "MAX", or "unknown-op". The string is static.
inline const char* op_name(int32_t op) {
  switch (op) {
    case STRATA_SUM: return "SUM";
    case STRATA_AVG: return "AVG";
    case STRATA_MIN: return "MIN";
    case STRATA_MAX: return "MAX";
    default: return "unknown-op";
  }
}

// "allreduce", "allgather", "allgatherv", "reduce_scatter", "broadcast", "barrier", "alltoallv"
// (a strata_collective), or "an unknown collective". The string is static.
inline const char* collective_name(int32_t collective) {
  switch (collective) {
    case STRATA_COLL_ALLREDUCE: return "allreduce";
    case STRATA_COLL_ALLGATHER: return "allgather";
    case STRATA_COLL_ALLGATHERV: return "allgatherv";
    case STRATA_COLL_REDUCE_SCATTER: return "reduce_scatter";
    case STRATA_COLL_BROADCAST: return "broadcast";
    case STRATA_COLL_BARRIER: return "barrier";
    case STRATA_COLL_ALLTOALLV: return "alltoallv";
    default: return "an unknown collective";
  }
}

namespace detail {

// AVG's division of every element is on the critical path of every averaged allreduce. Loops go
// in blocks of a fixed size because GCC at -O2 vectorises only loops that need no remainder loop:
// a plain loop stays scalar (divss), 0.13 ms per step for the example's 235k gradients
// (bench/step_overhead). The results are those of one division per element.
template <class T, class Op>
void apply_all(T* values, size_t count, Op op) {
  constexpr size_t kBlock = 16;
  size_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    for (size_t j = 0; j < kBlock; ++j) values[i + j] = op(values[i + j]);
  }
  for (; i < count; ++i) values[i] = op(values[i]);
}

// Even vectorised, a division costs several cycles per element; for a power-of-two world size a
// floating-point division equals the multiplication by its exact reciprocal (both round the same
// real number once), which runs at memory speed.
template <class T>
void divide_all(void* data, size_t count, int divisor) {
  T* values = static_cast<T*>(data);
  // A divisor past T's range (u8 from 256 ranks) would wrap when converted; every quotient is 0.
  if constexpr (std::is_integral_v<T>) {
    if (static_cast<int64_t>(divisor) > static_cast<int64_t>(std::numeric_limits<T>::max())) {
      apply_all(values, count, [](T) { return T(0); });
      return;
    }
  }
  const T d = static_cast<T>(divisor);
  if constexpr (std::is_floating_point_v<T>) {
    if ((divisor & (divisor - 1)) == 0) {
      const T reciprocal = T(1) / d;
      apply_all(values, count, [reciprocal](T v) { return v * reciprocal; });
      return;
    }
  }
  apply_all(values, count, [d](T v) { return static_cast<T>(v / d); });
}

}  // namespace detail

// AVG's last step: data[i] /= divisor for `count` elements of a non-half dtype (f32, f64, i32,
// i64, u8; integers: truncating division); `divisor` > 0, the world size. Results are bitwise
// those of one division per element. Throws sdk::Error (STRATA_ERR_INTERNAL) for another dtype.
// Writes only `data`; thread-safe on disjoint buffers.
inline void divide_in_place(void* data, size_t count, int32_t dtype, int divisor) {
  switch (dtype) {
    case STRATA_F32: return detail::divide_all<float>(data, count, divisor);
    case STRATA_F64: return detail::divide_all<double>(data, count, divisor);
    case STRATA_I32: return detail::divide_all<int32_t>(data, count, divisor);
    case STRATA_I64: return detail::divide_all<int64_t>(data, count, divisor);
    case STRATA_U8: return detail::divide_all<uint8_t>(data, count, divisor);
    default:
      fail(STRATA_ERR_INTERNAL,
           "divide_in_place: unsupported dtype " + std::string(dtype_name(dtype)));
  }
}

}  // namespace strata::sdk::comm
