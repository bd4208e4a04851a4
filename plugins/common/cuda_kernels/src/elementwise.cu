// Single-array kernels: cast, accumulate, scale (and fill_zero, error_string). Grid-stride loops
// over packs of 4 elements: every element is read and written once.
#include <algorithm>
#include <strata_common/cuda/kernels.hpp>

#include "element_loop.cuh"

namespace strata::cuda {
namespace {

using detail::for_elements;
using detail::kPack;
using detail::load_pack;
using detail::Pack;
using detail::pack_aligned;
using detail::store_pack;

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU several times over; the loops stride past the rest.
constexpr std::size_t kMaxBlocks = std::size_t{1} << 16;

unsigned blocks_for(std::size_t n) {
  const std::size_t packs = (n + kPack - 1) / kPack;
  return static_cast<unsigned>(std::clamp<std::size_t>((packs + kThreads - 1) / kThreads, 1,
                                                       kMaxBlocks));
}

template <class Op>
__global__ void elementwise_kernel(Op op, std::size_t n) {
  const std::size_t first = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for_elements(op, n, op.packed(), first, stride);
}

template <class Op>
int launch(const Op& op, std::size_t n, void* stream) {
  if (n == 0) return 0;
  elementwise_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(op, n);
  return detail::launch_status();
}

// dst = Out(In(src)): f32 <-> half, each value through f32 (exact for the widening).
template <class In, class Out>
struct CastOp {
  const typename In::Storage* src;
  typename Out::Storage* dst;

  __device__ bool packed() const { return pack_aligned(src) && pack_aligned(dst); }
  __device__ void one(std::size_t i) const { dst[i] = Out::store(In::load(src[i])); }
  __device__ void pack(std::size_t i) const {
    const auto in = load_pack(src + i);
    Pack<typename Out::Storage> out;
#pragma unroll
    for (int k = 0; k < kPack; ++k) out.v[k] = Out::store(In::load(in.v[k]));
    store_pack(dst + i, out);
  }
};

template <class Dst, class Src>
struct AccumulateOp {
  typename Dst::Storage* dst;
  const typename Src::Storage* src;

  __device__ bool packed() const { return pack_aligned(src) && pack_aligned(dst); }
  __device__ void one(std::size_t i) const {
    dst[i] = Dst::store(math::accumulated(Dst::load(dst[i]), Src::load(src[i])));
  }
  __device__ void pack(std::size_t i) const {
    const auto in = load_pack(src + i);
    auto out = load_pack(dst + i);
#pragma unroll
    for (int k = 0; k < kPack; ++k) {
      out.v[k] = Dst::store(math::accumulated(Dst::load(out.v[k]), Src::load(in.v[k])));
    }
    store_pack(dst + i, out);
  }
};

template <class T>
struct ScaleOp {
  typename T::Storage* x;
  float s;

  __device__ bool packed() const { return pack_aligned(x); }
  __device__ void one(std::size_t i) const { x[i] = T::store(math::scaled(T::load(x[i]), s)); }
  __device__ void pack(std::size_t i) const {
    auto v = load_pack(x + i);
#pragma unroll
    for (int k = 0; k < kPack; ++k) v.v[k] = T::store(math::scaled(T::load(v.v[k]), s));
    store_pack(x + i, v);
  }
};

bool missing(const void* p, std::size_t n) { return n > 0 && p == nullptr; }

}  // namespace

const char* error_string(int code) { return cudaGetErrorString(static_cast<cudaError_t>(code)); }

int cast(const void* src, strata_dtype src_dtype, void* dst, strata_dtype dst_dtype,
         std::size_t n, void* stream) {
  if (missing(src, n) || missing(dst, n)) return cudaErrorInvalidValue;
  if (src_dtype == dst_dtype) {
    return detail::with_dtype(src_dtype, [&](auto tag) {
      using Storage = typename decltype(tag)::Storage;
      if (n == 0 || src == dst) return 0;
      return static_cast<int>(cudaMemcpyAsync(dst, src, n * sizeof(Storage),
                                              cudaMemcpyDeviceToDevice,
                                              static_cast<cudaStream_t>(stream)));
    });
  }
  if (src_dtype == STRATA_F32) {
    return detail::with_half_dtype(dst_dtype, [&](auto out) {
      using Out = decltype(out);
      return launch(CastOp<math::F32, Out>{static_cast<const float*>(src),
                                           static_cast<typename Out::Storage*>(dst)},
                    n, stream);
    });
  }
  if (dst_dtype == STRATA_F32) {
    return detail::with_half_dtype(src_dtype, [&](auto in) {
      using In = decltype(in);
      return launch(CastOp<In, math::F32>{static_cast<const typename In::Storage*>(src),
                                          static_cast<float*>(dst)},
                    n, stream);
    });
  }
  return cudaErrorInvalidValue;  // f16 <-> bf16: not a conversion the SDK offers
}

int accumulate(void* dst, strata_dtype dst_dtype, const void* src, strata_dtype src_dtype,
               std::size_t n, void* stream) {
  if (missing(src, n) || missing(dst, n)) return cudaErrorInvalidValue;
  return detail::with_dtype(dst_dtype, [&](auto d) {
    return detail::with_dtype(src_dtype, [&](auto s) {
      using Dst = decltype(d);
      using Src = decltype(s);
      return launch(AccumulateOp<Dst, Src>{static_cast<typename Dst::Storage*>(dst),
                                           static_cast<const typename Src::Storage*>(src)},
                    n, stream);
    });
  });
}

int scale(void* x, strata_dtype dtype, float s, std::size_t n, void* stream) {
  if (missing(x, n)) return cudaErrorInvalidValue;
  return detail::with_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    return launch(ScaleOp<T>{static_cast<typename T::Storage*>(x), s}, n, stream);
  });
}

int fill_zero(void* x, std::size_t bytes, void* stream) {
  if (missing(x, bytes)) return cudaErrorInvalidValue;
  if (bytes == 0) return 0;
  return static_cast<int>(cudaMemsetAsync(x, 0, bytes, static_cast<cudaStream_t>(stream)));
}

}  // namespace strata::cuda
