#include "collectives.hpp"

#include <algorithm>

namespace strata::rt {

strata_buffer host_buffer(const void* data, uint64_t count, int32_t dtype) {
  // Send buffers are only read by the comm plugin.
  return sdk::host_buffer(const_cast<void*>(data), count, dtype);
}

template <class Call>
void Collectives::run(Call&& call) const {
  try {
    call(comm_);
  } catch (const sdk::Error& e) {
    throw Error(e.code(), label_ + ": " + e.what());
  }
}

void Collectives::allreduce(const void* send, void* recv, uint64_t count, int32_t dtype,
                            int32_t op) const {
  run([&](const sdk::Comm& c) {
    c.allreduce(host_buffer(send, count, dtype), host_buffer(recv, count, dtype),
                static_cast<strata_reduce_op>(op));
  });
}

void Collectives::allgather(const void* send, void* recv, uint64_t count_per_rank,
                            int32_t dtype) const {
  const uint64_t total = count_per_rank * static_cast<uint64_t>(world_size_);
  run([&](const sdk::Comm& c) {
    c.allgather(host_buffer(send, count_per_rank, dtype), host_buffer(recv, total, dtype));
  });
}

void Collectives::broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root) const {
  run([&](const sdk::Comm& c) { c.broadcast(host_buffer(buf, count, dtype), root); });
}

void Collectives::broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root,
                            const strata_device& device) const {
  strata_buffer b = host_buffer(buf, count, dtype);
  b.device = device;
  run([&](const sdk::Comm& c) { c.broadcast(b, root); });
}

void Collectives::barrier() const {
  run([](const sdk::Comm& c) { c.barrier(); });
}

std::vector<std::string> Collectives::allgather_strings(const std::string& mine) const {
  const uint64_t my_length = mine.size();
  std::vector<uint64_t> lengths(static_cast<size_t>(world_size_));
  allgather(&my_length, lengths.data(), 1, STRATA_I64);
  // Ranks usually send texts of one length (digests, the same manifest), so padding costs little.
  const uint64_t longest = *std::max_element(lengths.begin(), lengths.end());
  if (longest == 0) return std::vector<std::string>(lengths.size());
  std::string padded = mine;
  padded.resize(longest, '\0');
  std::string all(longest * lengths.size(), '\0');
  allgather(padded.data(), all.data(), longest, STRATA_U8);
  std::vector<std::string> out;
  for (size_t rank = 0; rank < lengths.size(); ++rank) {
    out.push_back(all.substr(rank * longest, lengths[rank]));
  }
  return out;
}

}  // namespace strata::rt
