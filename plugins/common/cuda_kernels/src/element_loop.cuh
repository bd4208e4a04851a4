// Shared by the kernels: 4-element packs (one 16- or 8-byte memory access per array), the loop
// that walks a range of elements with them, and the dispatch from strata_dtype to a storage tag.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <strata_common/element_math.hpp>
#include <utility>

namespace strata::cuda::detail {

inline constexpr int kPack = 4;

template <class T>
struct alignas(sizeof(T) * kPack) Pack {
  T v[kPack];
};

template <class T>
__device__ inline Pack<T> load_pack(const T* p) {
  return *reinterpret_cast<const Pack<T>*>(p);
}
template <class T>
__device__ inline void store_pack(T* p, const Pack<T>& pack) {
  *reinterpret_cast<Pack<T>*>(p) = pack;
}

// Whether p can be read in packs (p itself, and so p + every multiple of kPack).
template <class T>
__device__ inline bool pack_aligned(const T* p) {
  return p == nullptr || reinterpret_cast<std::uintptr_t>(p) % sizeof(Pack<T>) == 0;
}

// Calls op.pack(i) for the packs and op.one(i) for single elements of [0, n), thread `first` of
// `stride` threads taking every stride-th pack (then element): consecutive threads touch
// consecutive memory. `packed` false: single elements only (some pointer is misaligned).
template <class Op>
__device__ inline void for_elements(const Op& op, std::size_t n, bool packed, std::size_t first,
                                    std::size_t stride) {
  std::size_t tail = 0;
  if (packed) {
    const std::size_t packs = n / kPack;
    // Unrolled so that a read-only pass (grad_stats) has several loads in flight per thread.
#pragma unroll 4
    for (std::size_t p = first; p < packs; p += stride) op.pack(p * kPack);
    tail = packs * kPack;
  }
  for (std::size_t i = tail + first; i < n; i += stride) op.one(i);
}

// f(tag) for the storage tag of dtype (math::F32, F16, BF16); cudaErrorInvalidValue for any
// other dtype.
template <class F>
int with_dtype(strata_dtype dtype, F&& f) {
  switch (dtype) {
    case STRATA_F32:
      return f(math::F32{});
    case STRATA_F16:
      return f(math::F16{});
    case STRATA_BF16:
      return f(math::BF16{});
    default:
      return cudaErrorInvalidValue;
  }
}

// f(tag) for the two half dtypes only (a model copy-out).
template <class F>
int with_half_dtype(strata_dtype dtype, F&& f) {
  if (dtype == STRATA_F16) return f(math::F16{});
  if (dtype == STRATA_BF16) return f(math::BF16{});
  return cudaErrorInvalidValue;
}

// The error of the launches just made (and clears it, so that it is reported once).
inline int launch_status() { return static_cast<int>(cudaGetLastError()); }

}  // namespace strata::cuda::detail
