// allgather, allgatherv, alltoallv, broadcast and barrier: collectives that move elements
// unchanged, so half dtypes travel as 16-bit integers.
#include "collectives.hpp"
#include "dtypes.hpp"

#include <limits>
#include <string>

namespace strata::allreduce_mpi {

void Collectives::allgather(const strata_buffer* send_arg, const strata_buffer* recv_arg,
                            Request& request) const {
  const char* call = "allgather";
  const auto [send, recv] = check_pair(call, send_arg, recv_arg, kPluginName, device_mask_);
  const uint64_t expected = saturating_product(send.count, comm_.size());
  check_count(call, "recv", recv.count, expected, "send.count * size");
  const int count = to_mpi_count(call, "send.count", send.count);

  const bool in_place = check_in_place(call, send, recv, recv.at(send.count * comm_.rank()),
                                       "send.data == recv.data + rank * send.count");
  if (use_shm(recv.bytes(), recv_arg)) {
    request.counts64.assign(static_cast<size_t>(comm_.size()), send.count);
    request.displs64.resize(static_cast<size_t>(comm_.size()));
    for (int r = 0; r < comm_.size(); ++r) request.displs64[r] = send.count * r;
    request.mpi_work = on_shm("shm_allgather", recv.bytes(),
                              [in = send.data, out = recv.data, counts = request.counts64.data(),
                               displs = request.displs64.data(),
                               dtype = send.dtype](shm::ShmGroup& group) {
                                group.allgatherv(in, out, counts, displs, dtype);
                              });
    return;
  }
  request.mpi_work = traced("mpi_allgather", recv.bytes(),
      gated(recv.bytes(),
            [this, input = in_place ? MPI_IN_PLACE : send.data, block = send.data, count,
             dtype = send.dtype, out = recv.data,
             two_level = two_level_on(send_arg, recv_arg)](MpiComm::Pending p) {
              if (p == nullptr && two_level) {
                two_level_allgather(block, out, static_cast<uint64_t>(count), dtype);
                return;
              }
              comm_.allgather(input, count, transfer_type(dtype), out, p);
            }));
}

void Collectives::two_level_allgather(const void* send, void* recv, uint64_t count,
                                      int32_t dtype) const {
  shm::two_level_allgather(*host_shm_, round_scratch_, grid_, send, recv, count,
                           config_.chunk_bytes, dtype,
                           [&](const void* block, void* slice, uint64_t elements) {
                             comm_.allgather_across_hosts(block, slice, static_cast<int>(elements),
                                                          transfer_type(dtype));
                           });
}

void Collectives::allgatherv(const strata_buffer* send_arg, const strata_buffer* recv_arg,
                             const uint64_t* recv_counts, const uint64_t* displs,
                             Request& request) const {
  const char* call = "allgatherv";
  const auto [send, recv] = check_pair(call, send_arg, recv_arg, kPluginName, device_mask_);
  check_counts_and_displs(call, recv_counts, displs);
  const int rank = comm_.rank();
  check_count(call, "send", send.count, recv_counts[rank], "recv_counts[rank]");

  request.counts.resize(comm_.size());
  request.displs.resize(comm_.size());
  constexpr uint64_t kMpiMax = std::numeric_limits<int>::max();
  for (int r = 0; r < comm_.size(); ++r) {
    check_block(call, recv, recv_counts, displs, static_cast<size_t>(r));
    // The argument names are built only for the message (this loop runs on every call).
    if (recv_counts[r] > kMpiMax || displs[r] > kMpiMax) {
      // Built by appending: GCC 12 at -O3 flags "literal" + std::string with a false -Wrestrict.
      std::string index = "[";
      index += std::to_string(r);
      index += ']';
      to_mpi_count(call, ("recv_counts" + index).c_str(), recv_counts[r]);
      to_mpi_count(call, ("displs" + index).c_str(), displs[r]);
    }
    request.counts[r] = static_cast<int>(recv_counts[r]);
    request.displs[r] = static_cast<int>(displs[r]);
  }
  const bool in_place = check_in_place(call, send, recv, recv.at(displs[rank]),
                                       "send.data == recv.data + displs[rank]");
  if (use_shm(recv.bytes(), recv_arg)) {
    request.counts64.assign(recv_counts, recv_counts + comm_.size());
    request.displs64.assign(displs, displs + comm_.size());
    request.mpi_work = on_shm("shm_allgatherv", recv.bytes(),
                              [in = send.data, out = recv.data, counts = request.counts64.data(),
                               offsets = request.displs64.data(),
                               dtype = send.dtype](shm::ShmGroup& group) {
                                group.allgatherv(in, out, counts, offsets, dtype);
                              });
    return;
  }
  request.mpi_work = traced("mpi_allgatherv", recv.bytes(),
      gated(recv.bytes(),
            [&comm = comm_, input = in_place ? MPI_IN_PLACE : send.data,
             count = request.counts[rank], type = transfer_type(send.dtype), out = recv.data,
             counts = request.counts.data(),
             offsets = request.displs.data()](MpiComm::Pending p) {
              comm.allgatherv(input, count, type, out, counts, offsets, p);
            }));
}

void Collectives::alltoallv(const strata_coll_args& args, Request& request) const {
  const char* call = "alltoallv";
  const auto [send, recv] = alltoallv_args(&args, comm_.size(), kPluginName, device_mask_);
  const size_t size = static_cast<size_t>(comm_.size());
  request.counts.resize(size);
  request.displs.resize(size);
  request.send_counts.resize(size);
  request.send_displs.resize(size);
  constexpr uint64_t kMpiMax = std::numeric_limits<int>::max();
  uint64_t received = 0;
  for (size_t r = 0; r < size; ++r) {
    const uint64_t values[4] = {args.send_counts[r], args.send_displs[r], args.recv_counts[r],
                                args.displs[r]};
    if (values[0] > kMpiMax || values[1] > kMpiMax || values[2] > kMpiMax || values[3] > kMpiMax) {
      // The argument names are built only for the message (this loop runs on every call); by
      // appending, as in allgatherv (GCC 12's false -Wrestrict).
      std::string index = "[";
      index += std::to_string(r);
      index += ']';
      const char* names[4] = {"send_counts", "send_displs", "recv_counts", "displs"};
      for (int i = 0; i < 4; ++i) to_mpi_count(call, (names[i] + index).c_str(), values[i]);
    }
    request.send_counts[r] = static_cast<int>(values[0]);
    request.send_displs[r] = static_cast<int>(values[1]);
    request.counts[r] = static_cast<int>(values[2]);
    request.displs[r] = static_cast<int>(values[3]);
    received += values[2];
  }
  const uint64_t bytes = received * recv.element_size;
  // No shared-memory form: the group (plugins/common/shm) has no alltoallv, so alltoallv goes over
  // MPI also when the group is active (correctness first). Device buffers go to MPI as they are
  // (CUDA-aware MPI), as for allgatherv.
  //
  // The ranks move different amounts, so the arrival gate's small-payload shortcut (MPI_I* calls
  // below arrival_gate_min_bytes) cannot be chosen by size: a blocking MPI_Alltoallv on one rank
  // does not match an MPI_Ialltoallv on another. Every rank takes the gate (when it is on).
  request.mpi_work = traced("mpi_alltoallv", bytes,
      gated(std::numeric_limits<uint64_t>::max(),
            [&comm = comm_, in = send.data, send_counts = request.send_counts.data(),
             send_displs = request.send_displs.data(), out = recv.data,
             recv_counts = request.counts.data(), recv_displs = request.displs.data(),
             type = transfer_type(send.dtype)](MpiComm::Pending p) {
              comm.alltoallv(in, send_counts, send_displs, out, recv_counts, recv_displs, type, p);
            }));
}

void Collectives::broadcast(const strata_buffer* buffer_arg, int32_t root, Request& request) const {
  const char* call = "broadcast";
  const Buffer buffer = check_buffer(call, "buf", buffer_arg, kPluginName, device_mask_);
  check_root(call, root, comm_.size());
  if (use_shm(buffer.bytes(), buffer_arg)) {
    request.mpi_work = on_shm("shm_broadcast", buffer.bytes(),
                              [data = buffer.data, count = buffer.count, dtype = buffer.dtype,
                               root](shm::ShmGroup& group) {
                                group.broadcast(data, count, dtype, root);
                              });
    return;
  }
  const int count = to_mpi_count(call, "buf.count", buffer.count);
  request.mpi_work = traced("mpi_broadcast", buffer.bytes(),
                            gated(buffer.bytes(),
                                  [&comm = comm_, data = buffer.data, count,
                                   type = transfer_type(buffer.dtype), root](MpiComm::Pending p) {
                                    comm.broadcast(data, count, type, root, p);
                                  }));
}

void Collectives::barrier(Request& request) const {
  if (use_shm(0, nullptr)) {
    request.mpi_work = on_shm("shm_barrier", 0, [](shm::ShmGroup& group) { group.barrier(); });
    return;
  }
  // The arrival gate is itself a barrier: with it on, a blocking barrier is the gate alone.
  request.mpi_work =
      traced("mpi_barrier", 0, [&comm = comm_, gate = config_.arrival_gate](MpiComm::Pending p) {
        if (p == nullptr && gate) {
          comm.arrival_gate();
        } else {
          comm.barrier(p);
        }
      });
}

}  // namespace strata::allreduce_mpi
