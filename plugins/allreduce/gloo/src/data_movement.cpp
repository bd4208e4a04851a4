// allgather, allgatherv, broadcast and barrier: collectives that move elements unchanged, so half
// dtypes travel as 16-bit integers. Gloo runs them in place on the output (no separate input):
// the caller's own block is copied into place first, with memmove when it already overlaps.
#include "collectives.hpp"

#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>

#include <cstring>
#include <string>

namespace strata::allreduce_gloo {

void Collectives::allgather(const strata_buffer* send_arg, const strata_buffer* recv_arg,
                            Request& request) const {
  const char* call = "allgather";
  const auto [send, recv] = check_pair(call, send_arg, recv_arg, kPluginName);
  const uint64_t expected = saturating_product(send.count, comm_.size());
  check_count(call, "recv", recv.count, expected, "send.count * size");
  check_in_place(call, send, recv, recv.at(send.count * comm_.rank()),
                 "send.data == recv.data + rank * send.count");
  if (use_shm(recv.bytes())) {
    const auto n = static_cast<size_t>(comm_.size());
    request.counts64.assign(n, send.count);
    request.displs64.resize(n);
    for (size_t r = 0; r < n; ++r) request.displs64[r] = send.count * r;
    on_shm(request, "shm_allgather", recv.bytes(),
           [in = send.data, out = recv.data, counts = request.counts64.data(),
            displs = request.displs64.data(),
            dtype = send.dtype](common::shm::ShmGroup& group) {
             group.allgatherv(in, out, counts, displs, dtype);
           });
    return;
  }
  const CallHeader header{STRATA_COLL_ALLGATHER, send.dtype, -1, -1, send.count, 0};
  request.work = guarded(call, "gloo_allgather", recv.bytes(), header,
                         [this, send = send, recv = recv] {
    if (send.count == 0) return;
    void* mine = recv.at(send.count * comm_.rank());
    std::memmove(mine, send.data, send.bytes());
    if (comm_.size() == 1) return;
    if (config_.hierarchical && host_shm_ != nullptr) {
      // Two levels: among the same local rank's ranks on the cross context (this rank's block
      // at its host index), then within the host through shared memory.
      return common::shm::two_level_allgather(
          *host_shm_, host_, grid_, mine, recv.data, send.count, send.count, send.dtype,
          [&](const void* block, void* slice, uint64_t elements) {
            const auto& cross = comm_.cross();
            const size_t bytes = elements * send.element_size;
            std::memcpy(static_cast<char*>(slice) + bytes * static_cast<size_t>(cross->rank),
                        block, bytes);
            gloo::AllgatherOptions options(cross);
            set_output(options, slice, elements * static_cast<size_t>(cross->size),
                       send.element_size);
            options.setTimeout(config_.timeout);
            gloo::allgather(options);
          });
    }
    gloo::AllgatherOptions options(comm_.world());
    set_output(options, recv.data, recv.count, recv.element_size);
    options.setTimeout(config_.timeout);
    gloo::allgather(options);
  });
}

// Gloo's allgatherv packs the blocks in rank order (it has no displacements): when the caller's
// displs are not that packing, the blocks arrive in a scratch buffer and finish() unpacks them.
void Collectives::allgatherv(const strata_buffer* send_arg, const strata_buffer* recv_arg,
                             const uint64_t* recv_counts, const uint64_t* displs,
                             Request& request) const {
  const char* call = "allgatherv";
  const auto [send, recv] = check_pair(call, send_arg, recv_arg, kPluginName);
  check_counts_and_displs(call, recv_counts, displs);
  const int rank = comm_.rank();
  const auto n = static_cast<size_t>(comm_.size());
  check_count(call, "send", send.count, recv_counts[rank], "recv_counts[rank]");
  bool packed = true;
  uint64_t total = 0;
  for (size_t r = 0; r < n; ++r) {
    check_block(call, recv, recv_counts, displs, r);
    packed = packed && displs[r] == total;
    total += recv_counts[r];
  }
  const bool in_place = check_in_place(call, send, recv, recv.at(displs[rank]),
                                       "send.data == recv.data + displs[rank]");
  if (use_shm(recv.bytes())) {
    request.counts64.assign(recv_counts, recv_counts + n);
    request.displs64.assign(displs, displs + n);
    on_shm(request, "shm_allgatherv", recv.bytes(),
           [in = send.data, out = recv.data, counts = request.counts64.data(),
            offsets = request.displs64.data(),
            dtype = send.dtype](common::shm::ShmGroup& group) {
             group.allgatherv(in, out, counts, offsets, dtype);
           });
    return;
  }
  CallHeader header{STRATA_COLL_ALLGATHERV, send.dtype, -1, -1, total, 0};
  header.digest = digest(displs, n, digest(recv_counts, n));
  request.counts.assign(recv_counts, recv_counts + n);
  std::vector<uint64_t> offsets(displs, displs + n);
  char* out = static_cast<char*>(recv.data);
  const size_t element_size = recv.element_size;
  if (!packed) {
    request.scratch = Scratch(host_, total * recv.element_size);
    out = static_cast<char*>(request.scratch.data());
    // Unpacking moves every block but our own, which is in place already unless it is not.
    request.finish = [=, counts = request.counts.data(), base = recv.data] {
      uint64_t from = 0;
      for (size_t r = 0; r < n; ++r) {
        if (static_cast<int>(r) != rank || !in_place) {
          std::memcpy(static_cast<char*>(base) + offsets[r] * element_size,
                      out + from * element_size, counts[r] * element_size);
        }
        from += counts[r];
      }
    };
  }
  const uint64_t my_offset = total - [&] {
    uint64_t after = 0;
    for (size_t r = static_cast<size_t>(rank); r < n; ++r) after += recv_counts[r];
    return after;
  }();
  request.work = guarded(call, "gloo_allgatherv", recv.bytes(), header,
                         [this, send = send, out, my_offset, total,
                                        counts = &request.counts, size = recv.element_size] {
    if (send.count > 0) std::memmove(out + my_offset * size, send.data, send.bytes());
    if (comm_.size() == 1 || total == 0) return;
    gloo::AllgathervOptions options(comm_.world());
    switch (size) {
      case 1: options.setOutput(reinterpret_cast<uint8_t*>(out), *counts); break;
      case 2: options.setOutput(reinterpret_cast<uint16_t*>(out), *counts); break;
      case 4: options.setOutput(reinterpret_cast<uint32_t*>(out), *counts); break;
      default: options.setOutput(reinterpret_cast<uint64_t*>(out), *counts); break;
    }
    options.setTimeout(config_.timeout);
    gloo::allgatherv(options);
  });
}

void Collectives::broadcast(const strata_buffer* buffer_arg, int32_t root, Request& request) const {
  const char* call = "broadcast";
  const Buffer buffer = check_buffer(call, "buf", buffer_arg, kPluginName);
  check_root(call, root, comm_.size());
  if (use_shm(buffer.bytes())) {
    on_shm(request, "shm_broadcast", buffer.bytes(),
           [data = buffer.data, count = buffer.count, dtype = buffer.dtype,
            root](common::shm::ShmGroup& group) {
             group.broadcast(data, count, dtype, root);
           });
    return;
  }
  const CallHeader header{STRATA_COLL_BROADCAST, buffer.dtype, -1, root, buffer.count, 0};
  request.work = guarded(call, "gloo_broadcast", buffer.bytes(), header, [this, buffer, root] {
    if (buffer.count == 0 || comm_.size() == 1) return;
    gloo::BroadcastOptions options(comm_.world());
    set_output(options, buffer.data, buffer.count, buffer.element_size);
    options.setRoot(root);
    options.setTimeout(config_.timeout);
    gloo::broadcast(options);
  });
}

// The agreement check before it is an allgather, which every rank must reach: it is the barrier.
void Collectives::barrier(Request& request) const {
  if (use_shm(0)) {
    on_shm(request, "shm_barrier", 0, [](common::shm::ShmGroup& group) { group.barrier(); });
    return;
  }
  const CallHeader header{STRATA_COLL_BARRIER, -1, -1, -1, 0, 0};
  request.work = guarded("barrier", "gloo_barrier", 0, header, [] {});
}

}  // namespace strata::allreduce_gloo
