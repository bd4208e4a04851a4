// The host half of the multi-tensor launches (plugins/common/cuda_kernels/src/tensor_table.hpp), which the GPU
// kernels trust for which elements they touch: packed tables, walked the way the device walks
// them (chunk_range per block), cover every element of every tensor exactly once, in tensor and
// chunk order, within the table's limits, with the right pointers and the partials' numbering.
// Plain C++: runs everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tensor_table.hpp"

namespace strata::cuda::detail {
namespace {

// A tensor as a block sees it: (tensor index, first element, element count).
struct Seen {
  std::size_t tensor;
  std::size_t begin;
  std::size_t count;
  bool operator==(const Seen&) const = default;
};

struct Walk {
  std::vector<Seen> chunks;
  std::vector<int> launch_sizes;
};

// Packs tensors of these counts, pointers encoding the tensor index (array a of tensor i is
// (i + 1) * 8 + a), and walks every launch as the blocks would.
Walk walk(const std::vector<std::size_t>& counts) {
  Walk w;
  const int rc = for_each_table<2>(
      counts.size(),
      [&](std::size_t i, void* (&ptr)[2]) {
        for (int a = 0; a < 2; ++a) ptr[a] = reinterpret_cast<void*>((i + 1) * 8 + a);
        return counts[i];
      },
      [&](const Table<2>& t, int blocks, std::size_t first) {
        EXPECT_EQ(first, w.chunks.size()) << "first_chunk numbers chunks across launches";
        EXPECT_GE(blocks, 1);
        EXPECT_LE(blocks, kMaxChunks);
        for (int b = 0; b < blocks; ++b) {
          const ChunkRange r = chunk_range(t, static_cast<unsigned>(b));
          EXPECT_LT(r.tensor, kMaxTensors);
          const auto id = reinterpret_cast<std::uintptr_t>(t.ptr[0][r.tensor]);
          EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.ptr[1][r.tensor]), id + 1);
          w.chunks.push_back({id / 8 - 1, r.begin, r.count});
        }
        w.launch_sizes.push_back(blocks);
        return 0;
      });
  EXPECT_EQ(rc, 0);
  return w;
}

// What the walk must give: every non-empty tensor's chunks, in order.
std::vector<Seen> expected(const std::vector<std::size_t>& counts) {
  std::vector<Seen> out;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    for (std::size_t begin = 0; begin < counts[i]; begin += kChunk) {
      out.push_back({i, begin, std::min(kChunk, counts[i] - begin)});
    }
  }
  return out;
}

TEST(TensorTable, ManySmallTensorsFillTablesByTensorCount) {
  std::vector<std::size_t> counts;
  for (std::size_t i = 0; i < 300; ++i) counts.push_back(i % 7 == 3 ? 0 : 1 + i * 13);
  const Walk w = walk(counts);
  EXPECT_EQ(w.chunks, expected(counts));
  std::size_t non_empty = 0;
  for (std::size_t c : counts) non_empty += c > 0;
  // One chunk each: full tables of kMaxTensors tensors, then the rest.
  ASSERT_EQ(w.launch_sizes.size(), (non_empty + kMaxTensors - 1) / kMaxTensors);
  EXPECT_EQ(w.launch_sizes.front(), kMaxTensors);
}

TEST(TensorTable, TensorLargerThanATableIsCarriedOver) {
  const std::vector<std::size_t> counts = {5, 3 * kMaxChunks * kChunk + 17, 9};
  const Walk w = walk(counts);
  EXPECT_EQ(w.chunks, expected(counts));
  ASSERT_EQ(w.launch_sizes.size(), 4u);
  EXPECT_EQ(w.launch_sizes[0], kMaxChunks);
}

TEST(TensorTable, TensorLimitReachedInsideATensor) {
  // The 128th tensor has many chunks: the table is full of tensors but takes that tensor's
  // chunks until it has kMaxChunks, then carries it over.
  std::vector<std::size_t> counts(kMaxTensors - 1, 100);
  counts.push_back(5000 * kChunk + 1);
  counts.insert(counts.end(), {1, kChunk, kChunk + 1});
  const Walk w = walk(counts);
  EXPECT_EQ(w.chunks, expected(counts));
  EXPECT_EQ(w.launch_sizes[0], kMaxChunks);
}

TEST(TensorTable, ChunkBoundariesExactly) {
  const std::vector<std::size_t> counts = {kChunk, kChunk - 1, kChunk + 1, 2 * kChunk, 1};
  const Walk w = walk(counts);
  EXPECT_EQ(w.chunks, expected(counts));
  EXPECT_EQ(w.launch_sizes, std::vector<int>{7});
}

TEST(TensorTable, NothingToDoLaunchesNothing) {
  EXPECT_TRUE(walk({}).launch_sizes.empty());
  EXPECT_TRUE(walk({0, 0, 0}).launch_sizes.empty());
}

TEST(TensorTable, ALaunchErrorStopsThePacking) {
  std::vector<std::size_t> counts(3 * kMaxTensors, 1);
  int launches = 0;
  const int rc = for_each_table<1>(
      counts.size(),
      [&](std::size_t i, void* (&ptr)[1]) {
        ptr[0] = nullptr;
        return counts[i];
      },
      [&](const Table<1>&, int, std::size_t) { return ++launches == 2 ? 98 : 0; });
  EXPECT_EQ(rc, 98);
  EXPECT_EQ(launches, 2);
}

}  // namespace
}  // namespace strata::cuda::detail
