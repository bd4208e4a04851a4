#include "dtypes.hpp"

#include <strata/plugin.hpp>

#include <type_traits>

namespace strata::allreduce_gloo {
namespace {

// Integer sums wrap as two's complement (as MPI's do in practice) instead of overflowing, which
// would be undefined behaviour.
template <class T>
T add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

template <class T>
ReduceFn typed(int32_t op) {
  switch (op) {
    case STRATA_SUM:
    case STRATA_AVG:
      return [](void* out, const void* a, const void* b, size_t n) {
        auto* o = static_cast<T*>(out);
        const auto* x = static_cast<const T*>(a);
        const auto* y = static_cast<const T*>(b);
        for (size_t i = 0; i < n; ++i) o[i] = add(x[i], y[i]);
      };
    case STRATA_MIN:
      return [](void* out, const void* a, const void* b, size_t n) {
        auto* o = static_cast<T*>(out);
        const auto* x = static_cast<const T*>(a);
        const auto* y = static_cast<const T*>(b);
        for (size_t i = 0; i < n; ++i) o[i] = y[i] < x[i] ? y[i] : x[i];
      };
    case STRATA_MAX:
      return [](void* out, const void* a, const void* b, size_t n) {
        auto* o = static_cast<T*>(out);
        const auto* x = static_cast<const T*>(a);
        const auto* y = static_cast<const T*>(b);
        for (size_t i = 0; i < n; ++i) o[i] = x[i] < y[i] ? y[i] : x[i];
      };
    default: sdk::fail(STRATA_ERR_INTERNAL, "reduce_function: unknown op " + std::to_string(op));
  }
}

// Copied from allreduce-mpi's dtypes.cpp so that AVG divides exactly as there (bitwise the same
// results): blocks of 16 so that GCC vectorises, and a power-of-two world size multiplies by the
// exact reciprocal (the same rounding as a division).
template <class T, class Op>
void apply_all(T* values, size_t count, Op op) {
  constexpr size_t kBlock = 16;
  size_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    for (size_t j = 0; j < kBlock; ++j) values[i + j] = op(values[i + j]);
  }
  for (; i < count; ++i) values[i] = op(values[i]);
}

template <class T>
void divide_all(void* data, size_t count, int divisor) {
  T* values = static_cast<T*>(data);
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

}  // namespace

bool is_half(int32_t dtype) { return dtype == STRATA_F16 || dtype == STRATA_BF16; }

int32_t accumulate_dtype(int32_t dtype) { return is_half(dtype) ? STRATA_F32 : dtype; }

bool is_known_op(int32_t op) { return op >= STRATA_SUM && op <= STRATA_MAX; }

const char* op_name(int32_t op) {
  switch (op) {
    case STRATA_SUM: return "SUM";
    case STRATA_AVG: return "AVG";
    case STRATA_MIN: return "MIN";
    case STRATA_MAX: return "MAX";
    default: return "unknown-op";
  }
}

ReduceFn reduce_function(int32_t dtype, int32_t op) {
  switch (dtype) {
    case STRATA_F32: return typed<float>(op);
    case STRATA_F64: return typed<double>(op);
    case STRATA_I32: return typed<int32_t>(op);
    case STRATA_I64: return typed<int64_t>(op);
    case STRATA_U8: return typed<uint8_t>(op);
    default:
      sdk::fail(STRATA_ERR_INTERNAL,
                "reduce_function: unsupported dtype " + std::string(sdk::dtype_name(dtype)));
  }
}

void divide_in_place(void* data, size_t count, int32_t dtype, int divisor) {
  switch (dtype) {
    case STRATA_F32: return divide_all<float>(data, count, divisor);
    case STRATA_F64: return divide_all<double>(data, count, divisor);
    case STRATA_I32: return divide_all<int32_t>(data, count, divisor);
    case STRATA_I64: return divide_all<int64_t>(data, count, divisor);
    case STRATA_U8: return divide_all<uint8_t>(data, count, divisor);
    default:
      sdk::fail(STRATA_ERR_INTERNAL,
                "divide_in_place: unsupported dtype " + std::string(sdk::dtype_name(dtype)));
  }
}

}  // namespace strata::allreduce_gloo
