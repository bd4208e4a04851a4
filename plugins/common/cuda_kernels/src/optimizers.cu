// Fused Adam/AdamW, SGD and Lion over many tensors (multi_tensor.cuh): each element's master,
// gradient and state are read once and written once, with the optional model-dtype copy written
// in the same pass. The arithmetic is element_math.hpp's, shared with the CPU tests.
#include <strata_common/cuda/kernels.hpp>

#include "multi_tensor.cuh"

namespace strata::cuda {
namespace {

using detail::ChunkRange;
using detail::kChunkThreads;
using detail::kPack;
using detail::load_pack;
using detail::Pack;
using detail::pack_aligned;
using detail::store_pack;
using detail::Table;

// The arrays of one chunk, offset to its first element. state[1] is unused by SGD and Lion;
// state[0] is NULL for SGD without momentum; copy is NULL when the tensor has no copy-out.
template <class G, class C>
struct Arrays {
  float* param;
  const typename G::Storage* grad;
  float* state[2];
  typename C::Storage* copy;
};

// The element update of each optimizer over (x, g, state...), as element_math.hpp has it.
struct AdamElement {
  AdamScalars s;
  __device__ void operator()(float& x, float g, float& m, float& v) const {
    math::adam_update(s, x, g, m, v);
  }
};
struct SgdMomentumElement {
  SgdScalars s;
  __device__ void operator()(float& x, float g, float& buf, float&) const {
    math::sgd_update_momentum(s, x, g, buf);
  }
};
struct SgdPlainElement {
  SgdScalars s;
  __device__ void operator()(float& x, float g, float&, float&) const {
    math::sgd_update_plain(s, x, g);
  }
};
struct LionElement {
  LionScalars s;
  __device__ void operator()(float& x, float g, float& m, float&) const {
    math::lion_update(s, x, g, m);
  }
};

// Loads and stores for kStates state arrays (0, 1 or 2), one element or one pack at a time.
template <class G, class C, int kStates, class Element>
struct StepOp {
  Arrays<G, C> a;
  Element element;

  __device__ bool packed() const {
    bool ok = pack_aligned(a.param) && pack_aligned(a.grad) && pack_aligned(a.copy);
    for (int k = 0; k < kStates; ++k) ok = ok && pack_aligned(a.state[k]);
    return ok;
  }
  __device__ void one(std::size_t i) const {
    float x = a.param[i];
    float s0 = kStates > 0 ? a.state[0][i] : 0.0f;
    float s1 = kStates > 1 ? a.state[1][i] : 0.0f;
    element(x, G::load(a.grad[i]), s0, s1);
    a.param[i] = x;
    if (kStates > 0) a.state[0][i] = s0;
    if (kStates > 1) a.state[1][i] = s1;
    if (a.copy != nullptr) a.copy[i] = C::store(x);
  }
  __device__ void pack(std::size_t i) const {
    Pack<float> x = load_pack(a.param + i);
    const auto g = load_pack(a.grad + i);
    Pack<float> s0{}, s1{};
    if (kStates > 0) s0 = load_pack(a.state[0] + i);
    if (kStates > 1) s1 = load_pack(a.state[1] + i);
#pragma unroll
    for (int k = 0; k < kPack; ++k) element(x.v[k], G::load(g.v[k]), s0.v[k], s1.v[k]);
    store_pack(a.param + i, x);
    if (kStates > 0) store_pack(a.state[0] + i, s0);
    if (kStates > 1) store_pack(a.state[1] + i, s1);
    if (a.copy != nullptr) {
      Pack<typename C::Storage> c;
#pragma unroll
      for (int k = 0; k < kPack; ++k) c.v[k] = C::store(x.v[k]);
      store_pack(a.copy + i, c);
    }
  }
};

// Table arrays: 0 param, 1 grad, 2 copy, 3.. state.
template <int kStates>
constexpr int kTableArrays = 3 + kStates;

template <class G, class C, int kStates, class Element>
__global__ void __launch_bounds__(kChunkThreads)
    step_kernel(Table<kTableArrays<kStates>> table, Element element) {
  const ChunkRange r = detail::chunk_of_block(table);
  auto at = [&](int array) { return table.ptr[array][r.tensor]; };
  Arrays<G, C> a{};
  a.param = static_cast<float*>(at(0)) + r.begin;
  a.grad = static_cast<const typename G::Storage*>(at(1)) + r.begin;
  a.copy = at(2) == nullptr ? nullptr : static_cast<typename C::Storage*>(at(2)) + r.begin;
  for (int k = 0; k < kStates; ++k) a.state[k] = static_cast<float*>(at(3 + k)) + r.begin;
  const StepOp<G, C, kStates, Element> op{a, element};
  detail::for_elements(op, r.count, op.packed(), threadIdx.x, kChunkThreads);
}

// The pointers of one tensor in table order (param, grad, copy, state...) and its count.
struct TensorPointers {
  void* ptr[5];
  std::size_t count;
};

// Launches step_kernel<G, C, kStates> over `tensors` (pointers(i) gives tensor i's).
template <int kStates, class Element, class Pointers>
int run_step(std::size_t n, const Pointers& pointers, strata_dtype grad_dtype,
             strata_dtype model_dtype, const Element& element, void* stream) {
  constexpr int kArrays = kTableArrays<kStates>;
  bool copies = false;
  for (std::size_t i = 0; i < n; ++i) {
    const TensorPointers t = pointers(i);
    if (t.count == 0) continue;
    for (int k = 0; k < kArrays; ++k) {
      if (k != 2 && t.ptr[k] == nullptr) return cudaErrorInvalidValue;
    }
    copies = copies || t.ptr[2] != nullptr;
  }
  // No copy-out anywhere: model_dtype is not looked at (any half tag will do).
  const strata_dtype copy_dtype = copies ? model_dtype : STRATA_F16;
  const auto s = static_cast<cudaStream_t>(stream);
  return detail::with_dtype(grad_dtype, [&](auto g) {
    return detail::with_half_dtype(copy_dtype, [&](auto c) {
      using G = decltype(g);
      using C = decltype(c);
      return detail::for_each_table<kArrays>(
          n,
          [&](std::size_t i, void* (&ptr)[kArrays]) {
            const TensorPointers t = pointers(i);
            for (int k = 0; k < kArrays; ++k) ptr[k] = t.ptr[k];
            return t.count;
          },
          [&](const Table<kArrays>& table, int blocks, std::size_t) {
            step_kernel<G, C, kStates, Element><<<blocks, kChunkThreads, 0, s>>>(table, element);
            return detail::launch_status();
          });
    });
  });
}

}  // namespace

int adam_step(const AdamScalars& s, const AdamTensor* tensors, std::size_t n_tensors,
              strata_dtype grad_dtype, strata_dtype model_dtype, void* stream) {
  if (n_tensors > 0 && tensors == nullptr) return cudaErrorInvalidValue;
  const auto pointers = [&](std::size_t i) {
    const AdamTensor& t = tensors[i];
    return TensorPointers{{t.param, const_cast<void*>(t.grad), t.model_copy, t.exp_avg,
                           t.exp_avg_sq},
                          t.count};
  };
  return run_step<2>(n_tensors, pointers, grad_dtype, model_dtype, AdamElement{s}, stream);
}

int sgd_step(const SgdScalars& s, const SgdTensor* tensors, std::size_t n_tensors,
             strata_dtype grad_dtype, strata_dtype model_dtype, void* stream) {
  if (n_tensors > 0 && tensors == nullptr) return cudaErrorInvalidValue;
  // Tensors with and without a momentum buffer take different kernels: two passes over the
  // table, each skipping (count 0) the tensors of the other kind. Both kinds are checked before
  // either pass launches, so that a refused call has enqueued nothing.
  bool copies = false;
  for (std::size_t i = 0; i < n_tensors; ++i) {
    const SgdTensor& t = tensors[i];
    if (t.count > 0 && (t.param == nullptr || t.grad == nullptr)) return cudaErrorInvalidValue;
    copies = copies || (t.count > 0 && t.model_copy != nullptr);
  }
  if (copies && model_dtype != STRATA_F16 && model_dtype != STRATA_BF16) {
    return cudaErrorInvalidValue;
  }
  const auto with_buffer = [&](std::size_t i) {
    const SgdTensor& t = tensors[i];
    const std::size_t count = t.momentum_buffer != nullptr ? t.count : 0;
    return TensorPointers{{t.param, const_cast<void*>(t.grad), t.model_copy, t.momentum_buffer,
                           nullptr},
                          count};
  };
  const auto without_buffer = [&](std::size_t i) {
    const SgdTensor& t = tensors[i];
    const std::size_t count = t.momentum_buffer == nullptr ? t.count : 0;
    return TensorPointers{{t.param, const_cast<void*>(t.grad), t.model_copy, nullptr, nullptr},
                          count};
  };
  if (const int rc = run_step<1>(n_tensors, with_buffer, grad_dtype, model_dtype,
                                 SgdMomentumElement{s}, stream);
      rc != 0) {
    return rc;
  }
  return run_step<0>(n_tensors, without_buffer, grad_dtype, model_dtype, SgdPlainElement{s},
                     stream);
}

int lion_step(const LionScalars& s, const LionTensor* tensors, std::size_t n_tensors,
              strata_dtype grad_dtype, strata_dtype model_dtype, void* stream) {
  if (n_tensors > 0 && tensors == nullptr) return cudaErrorInvalidValue;
  const auto pointers = [&](std::size_t i) {
    const LionTensor& t = tensors[i];
    return TensorPointers{{t.param, const_cast<void*>(t.grad), t.model_copy, t.exp_avg, nullptr},
                          t.count};
  };
  return run_step<1>(n_tensors, pointers, grad_dtype, model_dtype, LionElement{s}, stream);
}

}  // namespace strata::cuda
