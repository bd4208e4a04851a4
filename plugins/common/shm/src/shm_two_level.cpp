#include <strata_common/shm_two_level.hpp>

#include <strata/comm/scratch.hpp>

#include <cstring>
#include <vector>

namespace strata::common::shm {

void two_level_allreduce(ShmGroup& host, const sdk::Host& memory, void* data, uint64_t count,
                         int32_t dtype, int32_t op,
                         const std::function<void(void* data, uint64_t count)>& across) {
  const auto local = static_cast<uint64_t>(host.local_size());
  const size_t element_size = sdk::dtype_size(dtype);
  const int32_t fold = op == STRATA_AVG ? STRATA_SUM : op;
  const uint64_t block = count / local;
  if (block > 0) {
    sdk::comm::Scratch slice(memory, block * element_size);
    host.reduce_scatter(data, slice.data(), block, dtype, fold);
    across(slice.data(), block);
    std::vector<uint64_t> counts(local, block), displs(local);
    for (uint64_t r = 0; r < local; ++r) displs[r] = r * block;
    host.allgatherv(slice.data(), data, counts.data(), displs.data(), dtype);
  }
  const uint64_t rest = count - block * local;
  if (rest == 0) return;
  void* tail = static_cast<char*>(data) + block * local * element_size;
  host.allreduce(tail, tail, rest, dtype, fold);
  if (host.local_rank() == 0) across(tail, rest);
  host.broadcast(tail, rest, dtype, 0);
}

namespace {

// Byte offset of the block of (local rank l, host j) where the blocks are packed slice by slice:
// local rank l's slice holds its namesakes' blocks in host order.
size_t packed_at(const HostGrid& grid, int l, int j, size_t block_bytes) {
  return (static_cast<size_t>(l) * static_cast<size_t>(grid.hosts) + static_cast<size_t>(j)) *
         block_bytes;
}

// Byte offset of global rank (l, j)'s block in a caller's buffer of `stride_bytes` per rank.
size_t global_at(const HostGrid& grid, int l, int j, size_t stride_bytes) {
  return static_cast<size_t>(grid.at(l, j)) * stride_bytes;
}

}  // namespace

void two_level_reduce_scatter(
    ShmGroup& host, const sdk::Host& memory, const HostGrid& grid, const void* send,
    uint64_t stride, void* recv, uint64_t count, int32_t dtype, int32_t op,
    const std::function<void(void* slice, void* block, uint64_t count)>& across) {
  if (count == 0) return;
  const size_t element_size = sdk::dtype_size(dtype);
  const size_t bytes = count * element_size;
  const auto hosts = static_cast<uint64_t>(grid.hosts);
  sdk::comm::Scratch packed(memory, static_cast<size_t>(grid.local) * hosts * bytes);
  auto* packed_bytes = static_cast<char*>(packed.data());
  for (int l = 0; l < grid.local; ++l) {
    for (int j = 0; j < grid.hosts; ++j) {
      std::memcpy(packed_bytes + packed_at(grid, l, j, bytes),
                  static_cast<const char*>(send) + global_at(grid, l, j, stride * element_size),
                  bytes);
    }
  }
  sdk::comm::Scratch slice(memory, hosts * bytes);
  host.reduce_scatter(packed.data(), slice.data(), hosts * count, dtype,
                      op == STRATA_AVG ? STRATA_SUM : op);
  across(slice.data(), recv, count);
}

void two_level_allgather(
    ShmGroup& host, const sdk::Host& memory, const HostGrid& grid, const void* send, void* recv,
    uint64_t stride, uint64_t count, int32_t dtype,
    const std::function<void(const void* block, void* slice, uint64_t count)>& across) {
  if (count == 0) return;
  const size_t element_size = sdk::dtype_size(dtype);
  const size_t bytes = count * element_size;
  const auto hosts = static_cast<uint64_t>(grid.hosts);
  const auto local = static_cast<uint64_t>(grid.local);
  sdk::comm::Scratch slice(memory, hosts * bytes);
  across(send, slice.data(), count);
  sdk::comm::Scratch packed(memory, local * hosts * bytes);
  std::vector<uint64_t> counts(local, hosts * count), displs(local);
  for (uint64_t l = 0; l < local; ++l) displs[l] = l * hosts * count;
  host.allgatherv(slice.data(), packed.data(), counts.data(), displs.data(), dtype);
  const auto* packed_bytes = static_cast<const char*>(packed.data());
  for (int l = 0; l < grid.local; ++l) {
    for (int j = 0; j < grid.hosts; ++j) {
      std::memcpy(static_cast<char*>(recv) + global_at(grid, l, j, stride * element_size),
                  packed_bytes + packed_at(grid, l, j, bytes), bytes);
    }
  }
}

}  // namespace strata::common::shm
