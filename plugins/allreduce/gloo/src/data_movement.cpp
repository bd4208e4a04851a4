// allgather, allgatherv, alltoallv, broadcast and barrier: collectives that move elements
// unchanged, so half dtypes travel as 16-bit integers. Gloo runs all but alltoallv in place on the
// output (no separate input): the caller's own block is copied into place first, with memmove
// when it already overlaps.
#include "collectives.hpp"

#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>

#include <cstring>
#include <string>
#include <vector>

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
    if (two_level()) {
      // Two levels: among the same local rank's ranks on the cross context (this rank's block
      // at its host index), then within the host through shared memory.
      return common::shm::two_level_allgather(
          *host_shm_, round_scratch_, grid_, mine, recv.data, send.count,
          config_.chunk_bytes, send.dtype,
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

namespace {

// Whether `displs` place blocks of `counts` back to back from 0, in rank order (Gloo's packing).
bool packed(const uint64_t* counts, const uint64_t* displs, size_t n) {
  uint64_t at = 0;
  for (size_t r = 0; r < n; ++r) {
    if (displs[r] != at) return false;
    at += counts[r];
  }
  return true;
}

// Moves the blocks between the caller's layout (`counts`/`displs` in elements over `base`) and
// Gloo's packing in `packed_data`: to the packing when `pack`, from it otherwise.
void repack(bool pack, char* base, char* packed_data, const uint64_t* counts,
            const uint64_t* displs, size_t n, size_t element_size) {
  size_t at = 0;
  for (size_t r = 0; r < n; ++r) {
    const size_t bytes = counts[r] * element_size;
    char* theirs = base + displs[r] * element_size;
    if (bytes > 0) {
      if (pack) {
        std::memcpy(packed_data + at, theirs, bytes);
      } else {
        std::memcpy(theirs, packed_data + at, bytes);
      }
    }
    at += bytes;
  }
}

// Gloo's element size from the pointer's type.
template <class Set>
void with_element_type(size_t element_size, void* data, Set set) {
  switch (element_size) {
    case 1: return set(static_cast<uint8_t*>(data));
    case 2: return set(static_cast<uint16_t*>(data));
    case 4: return set(static_cast<uint32_t*>(data));
    default: return set(static_cast<uint64_t*>(data));
  }
}

}  // namespace

// Gloo's alltoallv takes counts only: its blocks lie packed in rank order on both sides. When the
// caller's send_displs (or displs) are not that packing, the blocks are packed into (or arrive in)
// scratch memory inside the work item. Up to kFoldBytes / 16 = 64 ranks, every rank's send and
// recv counts travel in the agreement frame and every rank checks the whole matrix (rank i's
// send_counts[j] == rank j's recv_counts[i]), so all fail alike with STRATA_ERR_MISMATCH; above
// that, a mismatch surfaces as Gloo's error (STRATA_ERR_COMM).
void Collectives::alltoallv(const strata_coll_args& args, Request& request) const {
  const char* call = "alltoallv";
  const auto [send, recv] = alltoallv_args(&args, comm_.size(), kPluginName);
  const int rank = comm_.rank();
  const auto n = static_cast<size_t>(comm_.size());
  // Up to 64 ranks the agreement's matrix check catches this on every rank alike; above, only
  // this rank can see it (a local refusal, which leaves the others to the stall inspector).
  if (n > kFoldBytes / 16 && args.recv_counts[rank] != args.send_counts[rank]) {
    invalid_argument(call, "recv_counts[rank] (" + std::to_string(args.recv_counts[rank]) +
                               ") must equal send_counts[rank] (" +
                               std::to_string(args.send_counts[rank]) +
                               "): this rank's block to itself");
  }
  // counts64: send_counts then recv_counts (the agreement frame's payload); displs64 alike.
  request.counts64.assign(args.send_counts, args.send_counts + n);
  request.counts64.insert(request.counts64.end(), args.recv_counts, args.recv_counts + n);
  request.displs64.assign(args.send_displs, args.send_displs + n);
  request.displs64.insert(request.displs64.end(), args.displs, args.displs + n);
  const uint64_t* send_counts = request.counts64.data();
  const uint64_t* recv_counts = send_counts + n;
  const uint64_t* send_displs = request.displs64.data();
  const uint64_t* recv_displs = send_displs + n;
  uint64_t send_total = 0, recv_total = 0;
  for (size_t r = 0; r < n; ++r) send_total += send_counts[r], recv_total += recv_counts[r];
  const size_t element_size = send.element_size;
  const bool send_packed = packed(send_counts, send_displs, n);
  const bool recv_packed = packed(recv_counts, recv_displs, n);
  char* in = static_cast<char*>(send.data);
  char* out = static_cast<char*>(recv.data);
  const size_t scratch_bytes = ((send_packed ? 0 : send_total) + (recv_packed ? 0 : recv_total)) *
                               element_size;
  if (scratch_bytes > 0) {
    request.scratch = Scratch(host_, scratch_bytes);
    char* scratch = static_cast<char*>(request.scratch.data());
    if (!send_packed) in = scratch;
    if (!recv_packed) out = scratch + (send_packed ? 0 : send_total * element_size);
  }
  // Gloo's unbound buffers want an address even when empty.
  static char empty;
  if (in == nullptr) in = &empty;
  if (out == nullptr) out = &empty;
  const CallHeader header{STRATA_COLL_ALLTOALLV, send.dtype, -1, -1, 0, 0};
  auto body = [this, n, in, out, send_counts, recv_counts, send_displs, recv_displs,
               send_packed, recv_packed, element_size, send = send, recv = recv] {
    if (!send_packed) {
      repack(true, static_cast<char*>(send.data), in, send_counts, send_displs, n, element_size);
    }
    if (n == 1) {
      if (send_counts[0] > 0) std::memcpy(out, in, send_counts[0] * element_size);
    } else {
      gloo::AlltoallvOptions options(comm_.world());
      std::vector<int64_t> sending(send_counts, send_counts + n);
      std::vector<int64_t> receiving(recv_counts, recv_counts + n);
      with_element_type(element_size, in, [&](auto* p) { options.setInput(p, sending); });
      with_element_type(element_size, out, [&](auto* p) { options.setOutput(p, receiving); });
      options.setTimeout(config_.timeout);
      gloo::alltoallv(options);
    }
    if (!recv_packed) {
      repack(false, static_cast<char*>(recv.data), out, recv_counts, recv_displs, n,
             element_size);
    }
  };
  Fold fold;
  if (2 * n * sizeof(uint64_t) <= kFoldBytes) {
    fold.data = send_counts;
    fold.bytes = 2 * n * sizeof(uint64_t);
    fold.reduce = [n, body](const std::vector<Frame>& frames) {
      uint64_t sends = 0, expects = 0;
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < n; ++j) {
          std::memcpy(&sends, frames[i].payload + j * sizeof(uint64_t), sizeof sends);
          std::memcpy(&expects, frames[j].payload + (n + i) * sizeof(uint64_t), sizeof expects);
          if (sends == expects) continue;
          sdk::fail(STRATA_ERR_MISMATCH,
                    "alltoallv: rank " + std::to_string(i) + " sends " + std::to_string(sends) +
                        " elements to rank " + std::to_string(j) + " (its send_counts[" +
                        std::to_string(j) + "]), which expects " + std::to_string(expects) +
                        " (its recv_counts[" + std::to_string(i) + "])");
        }
      }
      body();
    };
  }
  request.work = guarded(call, "gloo_alltoallv", send_total * element_size, header, body,
                         std::move(fold));
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
