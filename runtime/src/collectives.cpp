#include "collectives.hpp"

#include <algorithm>
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

namespace {

strata_coll_args coll_args(const strata_buffer* send, const strata_buffer* recv) {
  strata_coll_args a{};
  a.struct_size = sizeof(a);
  a.send = send;
  a.recv = recv;
  return a;
}

}  // namespace

void Collectives::call(const char* what, Collective fn, const strata_coll_args& args) const {
  if (fn == nullptr) {
    throw Error(STRATA_ERR_UNSUPPORTED, label_ + ": " + what + ": not offered by the comm stratum");
  }
  strata_error err{};
  err.struct_size = sizeof(err);
  const strata_status status = fn(self_, &args, nullptr, &err);
  if (status != STRATA_OK) throw Error(status, label_ + ": " + what + ": " + err.message);
}

void Collectives::allreduce(const void* send, void* recv, uint64_t count, int32_t dtype,
                            int32_t op) const {
  const strata_buffer s = host_buffer(send, count, dtype);
  const strata_buffer r = host_buffer(recv, count, dtype);
  strata_coll_args a = coll_args(&s, &r);
  a.op = op;
  call("allreduce", ops_.allreduce, a);
}

void Collectives::allgather(const void* send, void* recv, uint64_t count_per_rank,
                            int32_t dtype) const {
  const strata_buffer s = host_buffer(send, count_per_rank, dtype);
  const strata_buffer r = host_buffer(recv, count_per_rank * static_cast<uint64_t>(world_size_), dtype);
  call("allgather", ops_.allgather, coll_args(&s, &r));
}

void Collectives::allgatherv(const void* send, uint64_t send_count, void* recv,
                             const std::vector<uint64_t>& counts, int32_t dtype) const {
  std::vector<uint64_t> displs(counts.size(), 0);
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), uint64_t{0});
  const uint64_t total = std::accumulate(counts.begin(), counts.end(), uint64_t{0});
  const strata_buffer s = host_buffer(send, send_count, dtype);
  const strata_buffer r = host_buffer(recv, total, dtype);
  strata_coll_args a = coll_args(&s, &r);
  a.recv_counts = counts.data();
  a.displs = displs.data();
  call("allgatherv", ops_.allgatherv, a);
}

void Collectives::broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root) const {
  const strata_buffer b = host_buffer(buf, count, dtype);
  strata_coll_args a = coll_args(nullptr, &b);
  a.root = root;
  call("broadcast", ops_.broadcast, a);
}

void Collectives::barrier() const { call("barrier", ops_.barrier, coll_args(nullptr, nullptr)); }

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
