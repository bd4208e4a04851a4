// apex's multi_tensor_apply, the host half (plain C++, so that a CPU test checks it): many
// tensors in one launch. The host packs a table of the tensors' pointers and counts, and one
// entry per chunk (tensor, chunk index), into the kernel's parameters (passed by value: no
// host-to-device copy, no allocation); block b processes entry b (chunk_range). A table that
// fills up (kMaxChunks chunks or kMaxTensors tensors) is launched and the packing goes on in a
// new one, the tensor being split carried over as its tensor 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <strata_common/element_math.hpp>  // STRATA_HOST_DEVICE

namespace strata::cuda::detail {

// Elements per chunk (one block's work).
inline constexpr std::size_t kChunk = std::size_t{1} << 16;
inline constexpr int kMaxTensors = 128;
// Tables stay under 16 KiB of kernel parameters (CUDA 12.1+ allows 32,764 bytes on sm_70+),
// so a launch covers up to 128 Mi elements: enough blocks that the last wave is a small part.
inline constexpr int kMaxChunks = 2048;

template <int kArrays>
struct Table {
  void* ptr[kArrays][kMaxTensors];
  std::size_t count[kMaxTensors];
  uint32_t chunk[kMaxChunks];
  uint8_t tensor[kMaxChunks];
};
static_assert(kMaxTensors <= 256, "Table::tensor is a uint8_t");
static_assert(sizeof(Table<5>) < 20000, "kernel parameters");

// What entry `block` of a table covers.
struct ChunkRange {
  int tensor;
  std::size_t begin;  // first element of the chunk in the tensor
  std::size_t count;  // elements in the chunk
};

template <int kArrays>
STRATA_HOST_DEVICE inline ChunkRange chunk_range(const Table<kArrays>& t, unsigned block) {
  const int tensor = t.tensor[block];
  const std::size_t begin = std::size_t{t.chunk[block]} * kChunk;
  const std::size_t left = t.count[tensor] - begin;
  return {tensor, begin, left < kChunk ? left : kChunk};
}

// Chunks of a tensor of `count` elements.
inline std::size_t chunk_count(std::size_t count) { return (count + kChunk - 1) / kChunk; }

// Packs tensors 0..n-1 into tables and calls launch(table, chunks, first_chunk) for each: chunks
// is the table's entry count (the grid size), first_chunk the index of its first entry among all
// chunks of the call (chunks numbered tensor by tensor, in order). arrays(i, ptr) fills tensor
// i's kArrays pointers and returns its count; tensors of count 0 are left out. Stops at the
// first launch that returns non-zero, and returns that.
template <int kArrays, class Arrays, class Launch>
int for_each_table(std::size_t n, const Arrays& arrays, const Launch& launch) {
  Table<kArrays> table{};
  int tensors = 0;
  int chunks = 0;
  std::size_t launched = 0;
  for (std::size_t i = 0; i < n; ++i) {
    void* ptr[kArrays];
    const std::size_t count = arrays(i, ptr);
    if (count == 0) continue;
    for (int a = 0; a < kArrays; ++a) table.ptr[a][tensors] = ptr[a];
    table.count[tensors] = count;
    ++tensors;
    const std::size_t n_chunks = chunk_count(count);
    for (std::size_t c = 0; c < n_chunks; ++c) {
      table.tensor[chunks] = static_cast<uint8_t>(tensors - 1);
      table.chunk[chunks] = static_cast<uint32_t>(c);
      ++chunks;
      const bool last = c + 1 == n_chunks;
      if (chunks == kMaxChunks || (tensors == kMaxTensors && last)) {
        if (const int rc = launch(table, chunks, launched); rc != 0) return rc;
        launched += static_cast<std::size_t>(chunks);
        chunks = 0;
        if (last) {
          tensors = 0;
        } else {  // the rest of this tensor's chunks go on in the next table, as tensor 0
          for (int a = 0; a < kArrays; ++a) table.ptr[a][0] = table.ptr[a][tensors - 1];
          table.count[0] = table.count[tensors - 1];
          tensors = 1;
        }
      }
    }
  }
  if (chunks > 0) return launch(table, chunks, launched);
  return 0;
}

}  // namespace strata::cuda::detail
