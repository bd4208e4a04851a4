// allreduce and reduce_scatter: the collectives that do arithmetic.
#include "collectives.hpp"
#include "dtypes.hpp"

#include <algorithm>
#include <climits>
#include <string>

namespace strata::allreduce_mpi {
namespace {

// What runs after MPI: AVG's division (in the accumulation dtype) and, for halves, rounding the
// f32 result back into the caller's buffer.
std::function<void()> reduction_epilogue(int32_t dtype, int32_t op, void* result, void* out,
                                         size_t count, int world) {
  const bool average = op == STRATA_AVG && world > 1;
  const bool half = is_half(dtype);
  if (!average && !half) return {};
  return [=] {
    if (average) divide_in_place(result, count, accumulate_dtype(dtype), world);
    if (half) f32_to_half(dtype, static_cast<const float*>(result), out, count);
  };
}

}  // namespace

void Collectives::check_device_reduction(const char* call, const strata_buffer* send,
                                         int32_t op) const {
  if (send->device.type == STRATA_DEVICE_HOST) return;
  if (is_half(send->dtype)) {
    sdk::fail(STRATA_ERR_UNSUPPORTED, std::string(call) + ": " + sdk::dtype_name(send->dtype) +
                                     " on " + device_name(send->device) + ": " + kPluginName +
                                     " reduces halves in f32 on the host; use allreduce-nccl");
  }
  if (op == STRATA_AVG && comm_.size() > 1) {
    sdk::fail(STRATA_ERR_UNSUPPORTED, std::string(call) + ": AVG on " + device_name(send->device) +
                                     ": " + kPluginName +
                                     " divides on the host; use SUM and scale, or allreduce-nccl");
  }
}

Collectives::ReductionBuffers Collectives::reduction_buffers(const char* call, const Buffer& send,
                                                             const Buffer& recv,
                                                             Request& request) const {
  if (is_half(send.dtype)) {
    // Halves are reduced in f32, in place in a scratch copy: MPI reads every block from it and
    // leaves the result (for reduce_scatter: our block) at its start.
    request.scratch = Scratch(host_, send.count * sizeof(float));
    half_to_f32(send.dtype, send.data, request.scratch.floats(), send.count);
    return {MPI_IN_PLACE, request.scratch.floats()};
  }
  const bool in_place = check_in_place(call, send, recv, recv.at(0), "send.data == recv.data");
  return {in_place ? MPI_IN_PLACE : send.data, recv.data};
}

void Collectives::chunked_allreduce(const void* send, void* recv, uint64_t count, int32_t dtype,
                                    int32_t op, bool two_level_on,
                                    MpiComm::Pending pending) const {
  const size_t element_size = sdk::dtype_size(dtype);
  const uint64_t piece = std::clamp<uint64_t>(config_.chunk_bytes / element_size, 1, INT_MAX);
  if (pending == nullptr && two_level_on) {
    // In the same pieces; a piece's cross-host slice is at most `piece` elements (an int).
    shm::two_level_allreduce(*host_shm_, send == MPI_IN_PLACE ? recv : send, recv, count, piece,
                             dtype, op,
                             [&](void* block, uint64_t elements) {
                               comm_.allreduce_across_hosts(block, static_cast<int>(elements),
                                                            transfer_type(dtype), mpi_op(op));
                             });
    return;
  }
  for (uint64_t offset = 0; offset < count; offset += piece) {
    const int n = static_cast<int>(std::min(piece, count - offset));
    char* piece_recv = static_cast<char*>(recv) + offset * element_size;
    const void* piece_send = send == MPI_IN_PLACE
                                 ? MPI_IN_PLACE
                                 : static_cast<const char*>(send) + offset * element_size;
    comm_.allreduce(piece_send, piece_recv, n, transfer_type(dtype), mpi_op(op), pending);
  }
}

void Collectives::two_level_reduce_scatter(const void* send, void* recv, uint64_t count,
                                           int32_t dtype, int32_t op) const {
  shm::two_level_reduce_scatter(*host_shm_, round_scratch_, grid_, send, recv, count,
                                config_.chunk_bytes, dtype, op,
                                [&](void* slice, void* block, uint64_t elements) {
                                  comm_.reduce_scatter_across_hosts(
                                      slice, block, static_cast<int>(elements),
                                      transfer_type(dtype), mpi_op(op));
                                });
}

void Collectives::allreduce(const strata_buffer* send_arg, const strata_buffer* recv_arg,
                            int32_t op, Request& request) const {
  const char* call = "allreduce";
  const auto [send, recv] = check_pair(call, send_arg, recv_arg, kPluginName, device_mask_);
  check_count(call, "recv", recv.count, send.count, "send.count");
  check_op(call, op);
  check_device_reduction(call, send_arg, op);
  if (use_shm(send.bytes(), send_arg)) {
    check_in_place(call, send, recv, recv.at(0), "send.data == recv.data");
    request.mpi_work = on_shm("shm_allreduce", send.bytes(),
                              [in = send.data, out = recv.data, count = send.count,
                               dtype = send.dtype, op](shm::ShmGroup& group) {
                                group.allreduce(in, out, count, dtype, op);
                              });
    return;
  }

  const int32_t accumulate = accumulate_dtype(send.dtype);
  const auto [input, result] = reduction_buffers(call, send, recv, request);
  request.mpi_work = traced("mpi_allreduce", send.bytes(),
                            gated(send.bytes(),
                                  [this, input = input, result = result, count = send.count,
                                   accumulate, op,
                                   two_level = two_level_on(send_arg, recv_arg)](
                                      MpiComm::Pending p) {
                                    chunked_allreduce(input, result, count, accumulate, op,
                                                      two_level, p);
                                  }));
  request.finish = reduction_epilogue(send.dtype, op, result, recv.data, send.count, comm_.size());
}

void Collectives::reduce_scatter(const strata_buffer* send_arg, const strata_buffer* recv_arg,
                                 int32_t op, Request& request) const {
  const char* call = "reduce_scatter";
  const auto [send, recv] = check_pair(call, send_arg, recv_arg, kPluginName, device_mask_);
  const uint64_t expected = saturating_product(recv.count, comm_.size());
  check_count(call, "send", send.count, expected, "recv.count * size");
  check_op(call, op);
  check_device_reduction(call, send_arg, op);
  if (use_shm(send.bytes(), send_arg)) {
    check_in_place(call, send, recv, recv.at(0), "send.data == recv.data");
    request.mpi_work = on_shm("shm_reduce_scatter", send.bytes(),
                              [in = send.data, out = recv.data, count = recv.count,
                               dtype = send.dtype, op](shm::ShmGroup& group) {
                                group.reduce_scatter(in, out, count, dtype, op);
                              });
    return;
  }
  const int count = to_mpi_count(call, "recv.count", recv.count);

  const int32_t accumulate = accumulate_dtype(send.dtype);
  const auto [input, result] = reduction_buffers(call, send, recv, request);
  request.mpi_work = traced(
      "mpi_reduce_scatter", send.bytes(),
      gated(send.bytes(), [this, input = input, result = result, count, accumulate, op,
                           two_level = two_level_on(send_arg, recv_arg)](MpiComm::Pending p) {
        if (p == nullptr && two_level) {
          two_level_reduce_scatter(input == MPI_IN_PLACE ? result : input, result,
                                   static_cast<uint64_t>(count), accumulate, op);
          return;
        }
        comm_.reduce_scatter_block(input, result, count, transfer_type(accumulate), mpi_op(op),
                                   p);
      }));
  request.finish = reduction_epilogue(send.dtype, op, result, recv.data, recv.count, comm_.size());
}

}  // namespace strata::allreduce_mpi
