#include "collectives.hpp"

#include "cuda_errors.hpp"
#include "device_buffers.hpp"

#include <string>

namespace strata::allreduce_nccl {

DeviceScratch::DeviceScratch(int device) {
  check_cuda(cudaSetDevice(device),
             "allreduce-nccl: cudaSetDevice(" + std::to_string(device) + ")");
  if (cudaMalloc(reinterpret_cast<void**>(&data_), sizeof(float)) != cudaSuccess) {
    cudaGetLastError();
    sdk::fail(
        STRATA_ERR_OUT_OF_MEMORY,
        "allreduce-nccl: cannot allocate barrier's 4 bytes on cuda:" + std::to_string(device));
  }
  // A defined value (0): the sums barrier makes of it are never read, but stay 0.
  const cudaError_t zeroed = cudaMemset(data_, 0, sizeof(float));
  if (zeroed != cudaSuccess) cudaFree(data_);
  check_cuda(zeroed, "allreduce-nccl: cudaMemset of barrier's operand");
}

DeviceScratch::~DeviceScratch() { cudaFree(data_); }

template <class Enqueue>
void Collectives::launch(const char* call, Request& r, Enqueue&& enqueue) {
  comm_.check_usable(call);
  check_cuda(cudaSetDevice(comm_.device()),
             std::string("allreduce-nccl: ") + call + ": cudaSetDevice");
  const cudaStream_t host = order_.host_stream();
  order_.after(host, call);
  r.call = call;
  r.started = std::chrono::steady_clock::now();
  enqueue(comm_.get(), order_.stream());
  order_.before(host, r.done, call);
}

void Collectives::allreduce(const strata_coll_args& a, Request& r) {
  const char* call = "allreduce";
  const BufferPair pair = check_device_pair(call, a.send, a.recv, comm_.device());
  const Buffer& send = pair.send;  // named, not bound: lambdas capture them (clang 14)
  const Buffer& recv = pair.recv;
  check_count(call, "recv", recv.count, send.count, "send.count");
  check_op(call, a.op);
  check_in_place(call, send, recv, recv.at(0), "send.data == recv.data");
  launch(call, r, [&](ncclComm_t c, cudaStream_t s) {
    if (send.count == 0) return;
    comm_.settle(
        ncclAllReduce(send.data, recv.data, send.count, nccl_type(send.dtype), nccl_op(a.op), c, s),
        call);
  });
}

void Collectives::allgather(const strata_coll_args& a, Request& r) {
  const char* call = "allgather";
  const BufferPair pair = check_device_pair(call, a.send, a.recv, comm_.device());
  const Buffer& send = pair.send;
  const Buffer& recv = pair.recv;
  const auto size = static_cast<uint64_t>(comm_.size());
  check_count(call, "recv", recv.count, saturating_product(send.count, size), "send.count * size");
  const auto rank = static_cast<uint64_t>(comm_.rank());
  check_in_place(call, send, recv, recv.at(send.count * rank),
                 "send.data == recv.data + rank * send.count");
  launch(call, r, [&](ncclComm_t c, cudaStream_t s) {
    if (send.count == 0) return;
    comm_.settle(ncclAllGather(send.data, recv.data, send.count, nccl_type(send.dtype), c, s),
                 call);
  });
}

// NCCL has no allgatherv: one broadcast per rank from that rank's block, fused in a group so that
// NCCL runs them together.
void Collectives::allgatherv(const strata_coll_args& a, Request& r) {
  const char* call = "allgatherv";
  const BufferPair pair = check_device_pair(call, a.send, a.recv, comm_.device());
  const Buffer& send = pair.send;
  const Buffer& recv = pair.recv;
  check_counts_and_displs(call, a.recv_counts, a.displs);
  const int rank = comm_.rank();
  check_count(call, "send", send.count, a.recv_counts[rank], "recv_counts[rank]");
  for (int peer = 0; peer < comm_.size(); ++peer)
    check_block(call, recv, a.recv_counts, a.displs, static_cast<size_t>(peer));
  check_in_place(call, send, recv, recv.at(a.displs[rank]),
                 "send.data == recv.data + displs[rank]");
  launch(call, r, [&](ncclComm_t c, cudaStream_t s) {
    const ncclDataType_t type = nccl_type(send.dtype);
    ncclResult_t first = ncclGroupStart();
    for (int peer = 0; peer < comm_.size() && first == ncclSuccess; ++peer) {
      const uint64_t count = a.recv_counts[peer];
      if (count == 0) continue;
      void* block = recv.at(a.displs[peer]);
      // The root's block comes from send; elsewhere sendbuff is not read (given as the block).
      first = ncclBroadcast(peer == rank ? send.data : block, block, count, type, peer, c, s);
    }
    const ncclResult_t ended = ncclGroupEnd();
    comm_.settle(first != ncclSuccess ? first : ended, call);
  });
}

void Collectives::reduce_scatter(const strata_coll_args& a, Request& r) {
  const char* call = "reduce_scatter";
  const BufferPair pair = check_device_pair(call, a.send, a.recv, comm_.device());
  const Buffer& send = pair.send;
  const Buffer& recv = pair.recv;
  const auto size = static_cast<uint64_t>(comm_.size());
  check_count(call, "send", send.count, saturating_product(recv.count, size), "recv.count * size");
  check_op(call, a.op);
  const auto rank = static_cast<uint64_t>(comm_.rank());
  // NCCL's in-place reduce_scatter: recv is rank's block of send.
  if (recv.data != static_cast<void*>(send.at(recv.count * rank))) {
    check_in_place(call, send, recv, nullptr, "recv.data == send.data + rank * recv.count");
  }
  launch(call, r, [&](ncclComm_t c, cudaStream_t s) {
    if (recv.count == 0) return;
    comm_.settle(ncclReduceScatter(send.data, recv.data, recv.count, nccl_type(send.dtype),
                                   nccl_op(a.op), c, s),
                 call);
  });
}

void Collectives::broadcast(const strata_coll_args& a, Request& r) {
  const char* call = "broadcast";
  const Buffer buffer = check_device_buffer(call, "recv", a.recv, comm_.device());
  check_root(call, a.root, comm_.size());
  launch(call, r, [&](ncclComm_t c, cudaStream_t s) {
    if (buffer.count == 0) return;
    comm_.settle(ncclBroadcast(buffer.data, buffer.data, buffer.count, nccl_type(buffer.dtype),
                               a.root, c, s),
                 call);
  });
}

// A one-element allreduce: complete on a rank only once every rank has joined it.
void Collectives::barrier(Request& r) {
  const char* call = "barrier";
  launch(call, r, [&](ncclComm_t c, cudaStream_t s) {
    comm_.settle(ncclAllReduce(scratch_.get(), scratch_.get(), 1, ncclFloat32, ncclSum, c, s),
                 call);
  });
}

// NCCL has no alltoallv: one ncclSend and one ncclRecv per peer (this rank included), fused in a
// group so that NCCL runs them together and no pair waits on another. Zero-element blocks are
// left out: NCCL needs nothing from a peer that sends or receives nothing.
void Collectives::alltoallv(const strata_coll_args& a, Request& r) {
  const char* call = "alltoallv";
  const BufferPair pair = check_device_alltoallv(a, comm_.size(), comm_.device());
  const Buffer& send = pair.send;
  const Buffer& recv = pair.recv;
  launch(call, r, [&](ncclComm_t c, cudaStream_t s) {
    const ncclDataType_t type = nccl_type(send.dtype);
    ncclResult_t first = ncclGroupStart();
    for (int peer = 0; peer < comm_.size() && first == ncclSuccess; ++peer) {
      const uint64_t sent = a.send_counts[peer];
      const uint64_t received = a.recv_counts[peer];
      if (sent > 0) first = ncclSend(send.at(a.send_displs[peer]), sent, type, peer, c, s);
      if (received > 0 && first == ncclSuccess) {
        first = ncclRecv(recv.at(a.displs[peer]), received, type, peer, c, s);
      }
    }
    const ncclResult_t ended = ncclGroupEnd();
    comm_.settle(first != ncclSuccess ? first : ended, call);
  });
}

}  // namespace strata::allreduce_nccl
