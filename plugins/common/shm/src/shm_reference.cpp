// The plain C++ reference of the shared-memory reductions: the rules of shm_reference.hpp applied
// one element at a time. Used for the vector kernels' tails and as the definition tests compare
// every instruction set against.
#include <strata_common/shm_reference.hpp>

#include <strata/plugin.hpp>

#include <string>

namespace strata::common::shm {
namespace {

template <int32_t kDtype>
void reduce_elements(const ReduceArgs& a, size_t begin, size_t end) {
  using E = Element<kDtype>;
  using Stored = typename E::Stored;
  using A = typename E::A;
  const auto* const* src = reinterpret_cast<const Stored* const*>(a.sources);
  auto* out = static_cast<Stored*>(a.out);
  auto* out2 = static_cast<Stored*>(a.out2);
  const bool divide = a.op == STRATA_AVG && a.divisor > 1;
  for (size_t i = begin; i < end; ++i) {
    A acc = E::widen(src[0][i]);
    for (int k = 1; k < a.n_sources; ++k) acc = rule::step(a.op, acc, E::widen(src[k][i]));
    if (divide) acc = rule::divide(acc, a.divisor);
    const Stored result = E::narrow(acc);
    out[i] = result;  // after every source's element i was read: out may alias one of them
    if (out2 != nullptr) out2[i] = result;
  }
}

void reduce_all(const ReduceArgs& a) { reduce_reference(a, 0, a.count); }

}  // namespace

void reduce_reference(const ReduceArgs& a, size_t begin, size_t end) {
  if (a.n_sources < 1) {
    sdk::fail(STRATA_ERR_INTERNAL,
              "shm reduce: n_sources must be >= 1, got " + std::to_string(a.n_sources));
  }
  if (a.op < STRATA_SUM || a.op > STRATA_MAX) {
    sdk::fail(STRATA_ERR_INTERNAL, "shm reduce: unknown op " + std::to_string(a.op));
  }
  switch (a.dtype) {
    case STRATA_F32: return reduce_elements<STRATA_F32>(a, begin, end);
    case STRATA_F16: return reduce_elements<STRATA_F16>(a, begin, end);
    case STRATA_BF16: return reduce_elements<STRATA_BF16>(a, begin, end);
    case STRATA_F64: return reduce_elements<STRATA_F64>(a, begin, end);
    case STRATA_I32: return reduce_elements<STRATA_I32>(a, begin, end);
    case STRATA_I64: return reduce_elements<STRATA_I64>(a, begin, end);
    case STRATA_U8: return reduce_elements<STRATA_U8>(a, begin, end);
    default:
      sdk::fail(STRATA_ERR_INTERNAL, "shm reduce: unknown dtype " + std::to_string(a.dtype));
  }
}

const Kernels& scalar_reference() {
  static const Kernels kernels{&reduce_all};
  return kernels;
}

}  // namespace strata::common::shm
