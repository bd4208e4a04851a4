// The streaming reference, compiled per instruction set and taken per set like the optimizer
// kernels (strata_common/highway_slot.hpp), so that both run the same vector width.
#include "bench_loops.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "stream_kernel.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace strata::bench::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One pass: load grad once, then load, add and store each read-write array.
template <int kArrays>
HWY_INLINE void StreamPass(float* const* arrays, const float* grad, size_t begin, size_t end) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = begin;
  for (; i + lanes <= end; i += lanes) {
    const auto g = hn::LoadU(d, grad + i);
    for (int a = 0; a < kArrays; ++a) {
      hn::StoreU(hn::Add(hn::LoadU(d, arrays[a] + i), g), d, arrays[a] + i);
    }
  }
  for (; i < end; ++i) {
    for (int a = 0; a < kArrays; ++a) arrays[a][i] += grad[i];
  }
}

void StreamRange(float* const* arrays, size_t count, const float* grad, size_t begin, size_t end) {
  if (count == 1) StreamPass<1>(arrays, grad, begin, end);
  if (count == 2) StreamPass<2>(arrays, grad, begin, end);
  if (count == 3) StreamPass<3>(arrays, grad, begin, end);
}

}  // namespace strata::bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <strata_common/highway_slot.hpp>

namespace strata::bench {
HWY_EXPORT(StreamRange);

StreamRange stream_range_for(common::cpu::Isa isa) {
  return HWY_DISPATCH_TABLE(StreamRange)[common::cpu::highway_slot(isa)];
}
}  // namespace strata::bench
#endif  // HWY_ONCE
