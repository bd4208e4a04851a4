#include <strata_common/shm_two_level.hpp>

#include <strata/comm/scratch.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

namespace strata::common::shm {

void two_level_allreduce(ShmGroup& host, const void* send, void* recv, uint64_t count,
                         uint64_t piece, int32_t dtype, int32_t op,
                         const std::function<void(void* data, uint64_t count)>& across) {
  if (count == 0) return;
  const auto local = static_cast<uint64_t>(host.local_size());
  const size_t element_size = sdk::dtype_size(dtype);
  const int32_t fold = op == STRATA_AVG ? STRATA_SUM : op;
  // Whole blocks in every piece but the last: only the message's own tail is left over.
  piece = std::min(std::max(piece - piece % local, local), count);
  std::vector<uint64_t> counts(local), displs(local);
  for (uint64_t offset = 0; offset < count; offset += piece) {
    const uint64_t n = std::min(piece, count - offset);
    const char* in = static_cast<const char*>(send) + offset * element_size;
    char* first = static_cast<char*>(recv) + offset * element_size;
    const uint64_t block = n / local;
    if (block > 0) {
      // This rank's block of the piece, where the allgather would put it: the reduce-scatter
      // writes it there, the cross-host step reduces it there, and the allgather then only
      // stages it and copies the other blocks in (no scratch, no copy of this block).
      char* mine = first + static_cast<uint64_t>(host.local_rank()) * block * element_size;
      host.reduce_scatter(in, mine, block, dtype, fold);
      across(mine, block);
      for (uint64_t r = 0; r < local; ++r) {
        counts[r] = block;
        displs[r] = r * block;
      }
      host.allgatherv(mine, first, counts.data(), displs.data(), dtype);
    }
    const uint64_t rest = n - block * local;
    if (rest == 0) continue;
    void* tail = first + block * local * element_size;
    host.allreduce(in + block * local * element_size, tail, rest, dtype, fold);
    if (host.local_rank() == 0) across(tail, rest);
    host.broadcast(tail, rest, dtype, 0);
  }
}

namespace {

// Byte offset of the block of (local rank l, host j) where the blocks are packed slice by slice:
// local rank l's slice holds its namesakes' blocks in host order.
size_t packed_at(const HostGrid& grid, int l, int j, size_t block_bytes) {
  return (static_cast<size_t>(l) * static_cast<size_t>(grid.hosts) + static_cast<size_t>(j)) *
         block_bytes;
}

// Elements of each rank's block per round: a round moves at most chunk_bytes of the whole message
// (every rank's block), at least one element of each and at most the `count` there are.
uint64_t round_elements(const HostGrid& grid, uint64_t chunk_bytes, size_t element_size,
                        uint64_t count) {
  const auto ranks = static_cast<uint64_t>(grid.hosts) * static_cast<uint64_t>(grid.local);
  return std::clamp<uint64_t>(chunk_bytes / element_size / ranks, 1, count);
}

// Byte offset of global rank (l, j)'s block in a caller's buffer of `stride_bytes` per rank.
size_t global_at(const HostGrid& grid, int l, int j, size_t stride_bytes) {
  return static_cast<size_t>(grid.at(l, j)) * stride_bytes;
}

}  // namespace

void two_level_reduce_scatter(
    ShmGroup& host, const sdk::comm::KeptScratch& scratch, const HostGrid& grid, const void* send,
    void* recv, uint64_t count, uint64_t chunk_bytes, int32_t dtype, int32_t op,
    const std::function<void(void* slice, void* block, uint64_t count)>& across) {
  if (count == 0) return;
  const size_t element_size = sdk::dtype_size(dtype);
  const uint64_t round = round_elements(grid, chunk_bytes, element_size, count);
  const auto hosts = static_cast<uint64_t>(grid.hosts);
  const sdk::comm::KeptScratch::Lease packed =
      scratch.lease(static_cast<size_t>(grid.local) * hosts * round * element_size);
  auto* packed_bytes = static_cast<char*>(packed.data());
  for (uint64_t offset = 0; offset < count; offset += round) {
    const uint64_t n = std::min(round, count - offset);
    const size_t bytes = n * element_size;
    const char* first = static_cast<const char*>(send) + offset * element_size;
    for (int l = 0; l < grid.local; ++l) {
      for (int j = 0; j < grid.hosts; ++j) {
        std::memcpy(packed_bytes + packed_at(grid, l, j, bytes),
                    first + global_at(grid, l, j, count * element_size), bytes);
      }
    }
    // This rank's slice is reduced where it lies in the packing (the group stages the others).
    char* slice = packed_bytes + packed_at(grid, host.local_rank(), 0, bytes);
    host.reduce_scatter(packed_bytes, slice, hosts * n, dtype, op == STRATA_AVG ? STRATA_SUM : op);
    across(slice, static_cast<char*>(recv) + offset * element_size, n);
  }
}

void two_level_allgather(
    ShmGroup& host, const sdk::comm::KeptScratch& scratch, const HostGrid& grid, const void* send,
    void* recv, uint64_t count, uint64_t chunk_bytes, int32_t dtype,
    const std::function<void(const void* block, void* slice, uint64_t count)>& across) {
  if (count == 0) return;
  const size_t element_size = sdk::dtype_size(dtype);
  const uint64_t round = round_elements(grid, chunk_bytes, element_size, count);
  const auto hosts = static_cast<uint64_t>(grid.hosts);
  const auto local = static_cast<uint64_t>(grid.local);
  const sdk::comm::KeptScratch::Lease packed = scratch.lease(local * hosts * round * element_size);
  auto* packed_bytes = static_cast<char*>(packed.data());
  std::vector<uint64_t> counts(local), displs(local);
  for (uint64_t offset = 0; offset < count; offset += round) {
    const uint64_t n = std::min(round, count - offset);
    const size_t bytes = n * element_size;
    // The cross-host step writes this rank's slice where it goes in the packing, so that the
    // group's allgather only stages it (no copy of the own slice).
    char* slice = packed_bytes + packed_at(grid, host.local_rank(), 0, bytes);
    across(static_cast<const char*>(send) + offset * element_size, slice, n);
    for (uint64_t l = 0; l < local; ++l) {
      counts[l] = hosts * n;
      displs[l] = l * hosts * n;
    }
    host.allgatherv(slice, packed_bytes, counts.data(), displs.data(), dtype);
    char* first = static_cast<char*>(recv) + offset * element_size;
    for (int l = 0; l < grid.local; ++l) {
      for (int j = 0; j < grid.hosts; ++j) {
        std::memcpy(first + global_at(grid, l, j, count * element_size),
                    packed_bytes + packed_at(grid, l, j, bytes), bytes);
      }
    }
  }
}

}  // namespace strata::common::shm
