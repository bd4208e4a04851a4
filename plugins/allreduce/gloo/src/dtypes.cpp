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

}  // namespace

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

}  // namespace strata::allreduce_gloo
