// The optimizer kernels, compiled once per instruction set by Highway's foreach_target and picked
// at run time by HWY_DYNAMIC_DISPATCH. Each kernel loads every array once, does all of the
// update in registers and stores every array once: the step is bound by memory bandwidth, so the
// one pass matters more than the arithmetic.
//
// The parameter is rounded once per step: x - (decay*x + update), the small terms summed first.
// Writing it x - decay*x - update rounds twice, each time at the parameter's ulp, and over 1,000
// steps that doubles fp32's drift from the exact trajectory. Decay as x - (lr*wd)*x rather than
// x*(1 - lr*wd): 1 - lr*wd rounded to fp32 keeps few digits of lr*wd, and that error has the same
// sign every step (DeepSpeed's CPU Adam keeps the decay apart too).
#include "optimizer_kernels.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optimizer_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "half_bits-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace strata::offload::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Writes the updated parameters once more as halves, when the kernel was asked to (`out` is
// NULL otherwise, hence the index apart from the pointer).
template <HalfType kOut, class D>
HWY_INLINE void StoreCopy(D d, hn::Vec<D> x, uint16_t* HWY_RESTRICT out, size_t i) {
  if constexpr (kOut == HalfType::f16) {
    hn::StoreU(F16Bits(d, x), hn::Rebind<uint16_t, D>(), out + i);
  } else if constexpr (kOut == HalfType::bf16) {
    hn::StoreU(Bf16Bits(d, x), hn::Rebind<uint16_t, D>(), out + i);
  }
}

// Calls op(d, i) for whole vectors over [begin, end), then one lane at a time for the rest, so
// that the remainder runs the very same arithmetic.
template <class Op>
HWY_INLINE void ForLanes(const Op& op, size_t begin, size_t end) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = begin;
  for (; i + lanes <= end; i += lanes) op(d, i);
  const hn::CappedTag<float, 1> d1;
  for (; i < end; ++i) op(d1, i);
}

// Picks the instantiation for the requested half copy-out outside the element loop.
template <template <HalfType> class Op, class Scalars, class Arrays>
HWY_INLINE void Run(const Scalars& s, const Arrays& a, size_t begin, size_t end) {
  auto* out = static_cast<uint16_t*>(a.copy.data);
  const HalfType type = out == nullptr ? HalfType::none : a.copy.type;
  switch (type) {
    case HalfType::none:
      return ForLanes(Op<HalfType::none>{s, a, out}, begin, end);
    case HalfType::f16:
      return ForLanes(Op<HalfType::f16>{s, a, out}, begin, end);
    case HalfType::bf16:
      return ForLanes(Op<HalfType::bf16>{s, a, out}, begin, end);
  }
}

template <HalfType kOut>
struct AdamOp {
  AdamScalars s;  // copies, so that stores through the float pointers cannot alias them
  AdamArrays a;
  uint16_t* out;

  template <class D>
  HWY_INLINE void operator()(D d, size_t i) const {
    const auto x = hn::LoadU(d, a.param + i);
    const auto g = hn::MulAdd(hn::Set(d, s.l2_decay), x,
                              hn::Mul(hn::LoadU(d, a.grad + i), hn::Set(d, s.grad_scale)));
    const auto m = hn::MulAdd(hn::Set(d, s.beta1), hn::LoadU(d, a.exp_avg + i),
                              hn::Mul(hn::Set(d, s.one_minus_beta1), g));
    const auto v = hn::MulAdd(hn::Set(d, s.beta2), hn::LoadU(d, a.exp_avg_sq + i),
                              hn::Mul(hn::Mul(hn::Set(d, s.one_minus_beta2), g), g));
    hn::StoreU(m, d, a.exp_avg + i);
    hn::StoreU(v, d, a.exp_avg_sq + i);
    const auto denom = hn::MulAdd(hn::Sqrt(v), hn::Set(d, s.inv_sqrt_bc2), hn::Set(d, s.eps));
    const auto update = hn::Mul(hn::Set(d, s.step_size), hn::Div(m, denom));
    const auto next = hn::Sub(x, hn::MulAdd(hn::Set(d, s.param_decay), x, update));
    hn::StoreU(next, d, a.param + i);
    StoreCopy<kOut>(d, next, out, i);
  }
};

enum class SgdMode { plain, momentum, nesterov };

template <HalfType kOut, SgdMode kMode>
struct SgdOp {
  SgdScalars s;
  SgdArrays a;
  uint16_t* out;

  template <class D>
  HWY_INLINE void operator()(D d, size_t i) const {
    const auto x = hn::LoadU(d, a.param + i);
    const auto g = hn::MulAdd(hn::Set(d, s.weight_decay), x,
                              hn::Mul(hn::LoadU(d, a.grad + i), hn::Set(d, s.grad_scale)));
    auto update = g;
    if constexpr (kMode != SgdMode::plain) {
      const auto buf = hn::MulAdd(hn::Set(d, s.buf_keep), hn::LoadU(d, a.momentum_buffer + i),
                                  hn::Mul(hn::Set(d, s.grad_keep), g));
      hn::StoreU(buf, d, a.momentum_buffer + i);
      update = kMode == SgdMode::nesterov ? hn::MulAdd(hn::Set(d, s.momentum), buf, g) : buf;
    }
    const auto next = hn::NegMulAdd(hn::Set(d, s.lr), update, x);
    hn::StoreU(next, d, a.param + i);
    StoreCopy<kOut>(d, next, out, i);
  }
};
template <HalfType kOut>
using SgdPlainOp = SgdOp<kOut, SgdMode::plain>;
template <HalfType kOut>
using SgdMomentumOp = SgdOp<kOut, SgdMode::momentum>;
template <HalfType kOut>
using SgdNesterovOp = SgdOp<kOut, SgdMode::nesterov>;

template <HalfType kOut>
struct LionOp {
  LionScalars s;
  LionArrays a;
  uint16_t* out;

  template <class D>
  HWY_INLINE void operator()(D d, size_t i) const {
    const auto x = hn::LoadU(d, a.param + i);
    const auto g = hn::Mul(hn::LoadU(d, a.grad + i), hn::Set(d, s.grad_scale));
    const auto m = hn::LoadU(d, a.exp_avg + i);
    const auto c = hn::MulAdd(hn::Set(d, s.beta1), m, hn::Mul(hn::Set(d, s.one_minus_beta1), g));
    // sign(c) as torch.sign: +-1, 0 for zero, NaN stays NaN.
    const auto one = hn::Set(d, 1.0f);
    const auto sign = hn::IfThenElse(hn::Gt(c, hn::Zero(d)), one,
                                     hn::IfThenElse(hn::Lt(c, hn::Zero(d)), hn::Neg(one), c));
    const auto update = hn::Mul(hn::Set(d, s.lr), sign);
    const auto next = hn::Sub(x, hn::MulAdd(hn::Set(d, s.param_decay), x, update));
    hn::StoreU(hn::MulAdd(hn::Set(d, s.beta2), m, hn::Mul(hn::Set(d, s.one_minus_beta2), g)), d,
               a.exp_avg + i);
    hn::StoreU(next, d, a.param + i);
    StoreCopy<kOut>(d, next, out, i);
  }
};

void AdamRange(const AdamScalars& s, const AdamArrays& a, size_t begin, size_t end) {
  Run<AdamOp>(s, a, begin, end);
}

void SgdRange(const SgdScalars& s, const SgdArrays& a, size_t begin, size_t end) {
  if (a.momentum_buffer == nullptr) {
    Run<SgdPlainOp>(s, a, begin, end);
  } else if (s.nesterov) {
    Run<SgdNesterovOp>(s, a, begin, end);
  } else {
    Run<SgdMomentumOp>(s, a, begin, end);
  }
}

void LionRange(const LionScalars& s, const LionArrays& a, size_t begin, size_t end) {
  Run<LionOp>(s, a, begin, end);
}

template <HalfType kOut>
struct ConvertOp {
  const float* src;
  uint16_t* out;

  template <class D>
  HWY_INLINE void operator()(D d, size_t i) const {
    StoreCopy<kOut>(d, hn::LoadU(d, src + i), out, i);
  }
};

void ConvertRange(HalfType type, const float* src, void* dst, size_t n) {
  auto* out = static_cast<uint16_t*>(dst);
  if (type == HalfType::f16) ForLanes(ConvertOp<HalfType::f16>{src, out}, 0, n);
  if (type == HalfType::bf16) ForLanes(ConvertOp<HalfType::bf16>{src, out}, 0, n);
}

int64_t DispatchedTarget() { return HWY_TARGET; }

}  // namespace strata::offload::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <strata/plugin.hpp>
#include <strata_common/highway_slot.hpp>
#include <string>

namespace strata::offload {

HWY_EXPORT(AdamRange);
HWY_EXPORT(SgdRange);
HWY_EXPORT(LionRange);
HWY_EXPORT(ConvertRange);
HWY_EXPORT(DispatchedTarget);

namespace {

OptimizerKernels make_kernels(common::cpu::Isa isa) {
  const std::size_t slot = common::cpu::highway_slot(isa);
  const OptimizerKernels k{HWY_DISPATCH_TABLE(AdamRange)[slot], HWY_DISPATCH_TABLE(SgdRange)[slot],
                           HWY_DISPATCH_TABLE(LionRange)[slot],
                           HWY_DISPATCH_TABLE(ConvertRange)[slot],
                           HWY_DISPATCH_TABLE(DispatchedTarget)[slot]()};
  common::cpu::check_target(isa, k.target, "strata_offload's optimizer kernels");
  return k;
}

}  // namespace

const OptimizerKernels& kernels_for(common::cpu::Isa isa) {
  return common::cpu::set_per_isa<OptimizerKernels>(isa, make_kernels);
}

}  // namespace strata::offload
#endif  // HWY_ONCE
