#include "engine/collectives.hpp"

#include <algorithm>
#include <cstring>

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

void Collectives::stage_host_buffers(std::function<void*()> stream, int rank) {
  staged_ = true;
  rank_ = rank;
  if (world_size_ > 1) staging_ = std::make_unique<HostStaging>(std::move(stream));
}

void Collectives::allreduce(const void* send, void* recv, uint64_t count, int32_t dtype,
                            int32_t op) const {
  if (staged_) return staged_allreduce(send, recv, count, dtype, op);
  run([&](const sdk::Comm& c) {
    c.allreduce(host_buffer(send, count, dtype), host_buffer(recv, count, dtype),
                static_cast<strata_reduce_op>(op));
  });
}

void Collectives::allgather(const void* send, void* recv, uint64_t count_per_rank,
                            int32_t dtype) const {
  if (staged_) return staged_allgather(send, recv, count_per_rank, dtype);
  const uint64_t total = count_per_rank * static_cast<uint64_t>(world_size_);
  run([&](const sdk::Comm& c) {
    c.allgather(host_buffer(send, count_per_rank, dtype), host_buffer(recv, total, dtype));
  });
}

void Collectives::broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root) const {
  if (staged_) return staged_broadcast(buf, count, dtype, root);
  run([&](const sdk::Comm& c) { c.broadcast(host_buffer(buf, count, dtype), root); });
}

void Collectives::broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root,
                            const strata_device& device) const {
  strata_buffer b = host_buffer(buf, count, dtype);
  b.device = device;
  run([&](const sdk::Comm& c) { c.broadcast(b, root); });
}

void Collectives::staged_allreduce(const void* send, void* recv, uint64_t count, int32_t dtype,
                                   int32_t op) const {
  const size_t bytes = count * sdk::dtype_size(dtype);
  if (!staging_) {  // one rank: every reduction of one contribution is that contribution
    if (recv != send && bytes != 0) std::memmove(recv, send, bytes);
    return;
  }
  const strata_buffer area = staging_->area(bytes, count, dtype, "allreduce");
  staging_->to_device(area.data, send, bytes, "allreduce");
  run([&](const sdk::Comm& c) { c.allreduce(area, area, static_cast<strata_reduce_op>(op)); });
  staging_->to_host(recv, area.data, bytes, "allreduce");
}

void Collectives::staged_allgather(const void* send, void* recv, uint64_t count_per_rank,
                                   int32_t dtype) const {
  const size_t part = count_per_rank * sdk::dtype_size(dtype);
  if (!staging_) {
    if (recv != send && part != 0) std::memmove(recv, send, part);
    return;
  }
  const uint64_t total = count_per_rank * static_cast<uint64_t>(world_size_);
  const strata_buffer all = staging_->area(part * static_cast<size_t>(world_size_), total, dtype,
                                           "allgather");
  // In place: this rank's part where the gathered result puts it.
  strata_buffer mine = all;
  mine.data = static_cast<char*>(all.data) + part * static_cast<size_t>(rank_);
  mine.count = count_per_rank;
  staging_->to_device(mine.data, send, part, "allgather");
  run([&](const sdk::Comm& c) { c.allgather(mine, all); });
  staging_->to_host(recv, all.data, part * static_cast<size_t>(world_size_), "allgather");
}

void Collectives::staged_broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root) const {
  if (!staging_) return;  // one rank: it is the root
  const size_t bytes = count * sdk::dtype_size(dtype);
  const strata_buffer area = staging_->area(bytes, count, dtype, "broadcast");
  staging_->to_device(area.data, buf, bytes, "broadcast");
  run([&](const sdk::Comm& c) { c.broadcast(area, root); });
  staging_->to_host(buf, area.data, bytes, "broadcast");
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
