// The two references bench/cpu_adam measures the optimizer kernels against.
#pragma once

#include <cstddef>

#include "optimizer_kernels.hpp"

namespace strata::bench {

// (a) The bandwidth limit: the same loads and stores as an optimizer kernel over [begin, end)
// with trivial arithmetic (each read-write array gets += grad), SIMD on instruction set `isa`,
// the kernels' (taken from Highway's table at the set's slot, as the kernels are). `arrays`
// holds 1 to 3 read-write arrays.
using StreamRange = void (*)(float* const* arrays, std::size_t count, const float* grad,
                             std::size_t begin, std::size_t end);
StreamRange stream_range_for(common::cpu::Isa isa);

// (b) Plain scalar single-thread loops with the kernels' arithmetic, built without
// vectorisation: what a straightforward C++ optimizer step runs at.
void scalar_adam(const offload::AdamScalars& s, float* p, const float* g, float* m, float* v,
                 std::size_t n);
void scalar_sgd(const offload::SgdScalars& s, float* p, const float* g, float* buf, std::size_t n);
void scalar_lion(const offload::LionScalars& s, float* p, const float* g, float* m, std::size_t n);

}  // namespace strata::bench
