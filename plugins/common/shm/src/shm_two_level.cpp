#include <strata_common/shm_two_level.hpp>

#include <strata/comm/scratch.hpp>

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

}  // namespace strata::common::shm
