// apex's multi_tensor_apply, the device half: block b of a table launch (tensor_table.hpp)
// works on the chunk of entry b, kChunkThreads threads to a block.
#pragma once

#include "element_loop.cuh"
#include "tensor_table.hpp"

namespace strata::cuda::detail {

inline constexpr int kChunkThreads = 512;

template <int kArrays>
__device__ inline ChunkRange chunk_of_block(const Table<kArrays>& t) {
  return chunk_range(t, blockIdx.x);
}

}  // namespace strata::cuda::detail
