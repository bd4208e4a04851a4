// The overflow check and squared norm over many tensors: one read of every gradient element.
// Deterministic without float atomics: each chunk's block writes one partial (its sum in a fixed
// tree order, and whether it met a non-finite element) to the workspace, and a one-block kernel
// adds the partials in a fixed order once all chunks are done (the stream orders the two).
#include <strata_common/cuda/kernels.hpp>

#include "multi_tensor.cuh"

namespace strata::cuda {
namespace {

using detail::ChunkRange;
using detail::kChunk;
using detail::kChunkThreads;
using detail::kPack;
using detail::Table;

static_assert(kStatsChunk == kChunk, "the workspace holds one partial per table chunk");

struct Partial {
  double sum_sq;
  int32_t nonfinite;
  int32_t reserved;
};
static_assert(sizeof(Partial) == 16, "grad_stats_workspace_bytes counts 16 bytes per chunk");

// Sums of squares and the finite check of a thread's elements.
template <class T>
struct SquaresOp {
  const typename T::Storage* x;
  double* sum;
  bool* bad;

  __device__ void add(float v) const {
    *sum += math::square(v);
    *bad |= !math::is_finite(v);
  }
  __device__ void one(std::size_t i) const { add(T::load(x[i])); }
  __device__ void pack(std::size_t i) const {
    const auto p = detail::load_pack(x + i);
#pragma unroll
    for (int k = 0; k < kPack; ++k) add(T::load(p.v[k]));
  }
};

// Adds the block's values in a fixed tree order (the result depends only on the values).
template <int kThreads>
__device__ double block_sum(double mine, double* shared) {
  shared[threadIdx.x] = mine;
  __syncthreads();
#pragma unroll
  for (int width = kThreads / 2; width >= 1; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width) shared[threadIdx.x] += shared[threadIdx.x + width];
    __syncthreads();
  }
  return shared[0];
}

template <class T>
__global__ void __launch_bounds__(kChunkThreads)
    chunk_partials(Table<1> table, Partial* partials, std::size_t first_chunk) {
  __shared__ double shared[kChunkThreads];
  const ChunkRange r = detail::chunk_of_block(table);
  const auto* x = static_cast<const typename T::Storage*>(table.ptr[0][r.tensor]) + r.begin;
  double sum = 0.0;
  bool bad = false;
  const SquaresOp<T> op{x, &sum, &bad};
  detail::for_elements(op, r.count, detail::pack_aligned(x), threadIdx.x, kChunkThreads);
  const bool any_bad = __syncthreads_or(bad) != 0;
  const double total = block_sum<kChunkThreads>(sum, shared);
  if (threadIdx.x == 0) partials[first_chunk + blockIdx.x] = {total, any_bad ? 1 : 0, 0};
}

constexpr int kFinalThreads = 256;

// Thread t adds the t-th contiguous run of partials in order, then the block adds the runs.
__global__ void __launch_bounds__(kFinalThreads)
    add_partials(const Partial* partials, std::size_t n, DeviceGradStats* out) {
  __shared__ double shared[kFinalThreads];
  const std::size_t per = (n + kFinalThreads - 1) / kFinalThreads;
  const std::size_t begin = threadIdx.x * per;
  const std::size_t end = begin + per < n ? begin + per : n;
  double sum = 0.0;
  bool bad = false;
  for (std::size_t i = begin; i < end; ++i) {
    sum += partials[i].sum_sq;
    bad |= partials[i].nonfinite != 0;
  }
  const bool any_bad = __syncthreads_or(bad) != 0;
  const double total = block_sum<kFinalThreads>(sum, shared);
  if (threadIdx.x == 0) *out = {total, any_bad ? 1 : 0, 0};
}

}  // namespace

std::size_t grad_stats_workspace_bytes(const DeviceTensor* tensors, std::size_t n_tensors) {
  std::size_t chunks = 0;
  for (std::size_t i = 0; i < n_tensors; ++i) chunks += detail::chunk_count(tensors[i].count);
  return chunks * sizeof(Partial);
}

int grad_stats(const DeviceTensor* tensors, std::size_t n_tensors, strata_dtype dtype,
               void* workspace, DeviceGradStats* out, void* stream) {
  if (out == nullptr || (n_tensors > 0 && tensors == nullptr)) return cudaErrorInvalidValue;
  std::size_t chunks = 0;
  for (std::size_t i = 0; i < n_tensors; ++i) {
    if (tensors[i].count > 0 && tensors[i].data == nullptr) return cudaErrorInvalidValue;
    chunks += detail::chunk_count(tensors[i].count);
  }
  if (chunks > 0 && workspace == nullptr) return cudaErrorInvalidValue;
  auto* partials = static_cast<Partial*>(workspace);
  const auto s = static_cast<cudaStream_t>(stream);
  const int rc = detail::with_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    return detail::for_each_table<1>(
        n_tensors,
        [&](std::size_t i, void* (&ptr)[1]) {
          ptr[0] = const_cast<void*>(tensors[i].data);
          return tensors[i].count;
        },
        [&](const Table<1>& table, int blocks, std::size_t first) {
          chunk_partials<T><<<blocks, kChunkThreads, 0, s>>>(table, partials, first);
          return detail::launch_status();
        });
  });
  if (rc != 0) return rc;
  add_partials<<<1, kFinalThreads, 0, s>>>(partials, chunks, out);
  return detail::launch_status();
}

}  // namespace strata::cuda
