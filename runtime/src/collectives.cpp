#include "collectives.hpp"

#include <numeric>

namespace strata::rt {

strata_buffer host_buffer(const void* data, uint64_t count, int32_t dtype) {
  strata_buffer b{};
  b.struct_size = sizeof(b);
  b.data = const_cast<void*>(data);  // send buffers are only read by the comm plugin
  b.count = count;
  b.dtype = dtype;
  b.device = strata_device{STRATA_DEVICE_HOST, 0};
  return b;
}

void Collectives::allreduce(const void* send, void* recv, uint64_t count, int32_t dtype,
                            int32_t op) const {
  const strata_buffer s = host_buffer(send, count, dtype);
  const strata_buffer r = host_buffer(recv, count, dtype);
  call("allreduce", &strata_comm_ops::allreduce, &s, &r, op, nullptr);
}

void Collectives::allgather(const void* send, void* recv, uint64_t count_per_rank,
                            int32_t dtype) const {
  const strata_buffer s = host_buffer(send, count_per_rank, dtype);
  const strata_buffer r = host_buffer(recv, count_per_rank * static_cast<uint64_t>(world_size_), dtype);
  call("allgather", &strata_comm_ops::allgather, &s, &r, nullptr);
}

void Collectives::allgatherv(const void* send, uint64_t send_count, void* recv,
                             const std::vector<uint64_t>& counts, int32_t dtype) const {
  std::vector<uint64_t> displs(counts.size(), 0);
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), uint64_t{0});
  const uint64_t total = std::accumulate(counts.begin(), counts.end(), uint64_t{0});
  const strata_buffer s = host_buffer(send, send_count, dtype);
  const strata_buffer r = host_buffer(recv, total, dtype);
  call("allgatherv", &strata_comm_ops::allgatherv, &s, &r, counts.data(), displs.data(),
             nullptr);
}

void Collectives::broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root) const {
  const strata_buffer b = host_buffer(buf, count, dtype);
  call("broadcast", &strata_comm_ops::broadcast, &b, root, nullptr);
}

void Collectives::barrier() const { call("barrier", &strata_comm_ops::barrier, nullptr); }

std::vector<std::string> Collectives::allgather_strings(const std::string& mine) const {
  const uint64_t my_length = mine.size();
  std::vector<uint64_t> lengths(static_cast<size_t>(world_size_));
  allgather(&my_length, lengths.data(), 1, STRATA_I64);
  std::string all(std::accumulate(lengths.begin(), lengths.end(), uint64_t{0}), '\0');
  allgatherv(mine.data(), my_length, all.data(), lengths, STRATA_U8);
  std::vector<std::string> out;
  size_t offset = 0;
  for (uint64_t length : lengths) {
    out.push_back(all.substr(offset, length));
    offset += length;
  }
  return out;
}

}  // namespace strata::rt
