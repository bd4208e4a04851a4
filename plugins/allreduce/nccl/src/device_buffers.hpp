// Argument checks for CUDA buffers: the SDK's (strata/comm/collective_args.hpp, with this plugin's
// device_mask, CUDA only), then this rank's device. They return sdk::comm::Buffer, so the SDK's
// count, op, root, block and in-place checks apply unchanged.
#pragma once

#include <strata/comm/collective_args.hpp>

#include <nccl.h>

namespace strata::allreduce_nccl {

using namespace sdk::comm;

// Named in the message for a buffer that is not CUDA memory of this rank's device.
inline constexpr char kPluginName[] = "allreduce-nccl";

// sdk::comm::check_buffer with a CUDA-only device_mask; then the buffer must be labelled
// cuda:`device` and, when it holds elements, CUDA must know its data pointer as memory of that
// device (device or managed memory): a host pointer, or one of another device, is
// STRATA_ERR_UNSUPPORTED naming the buffer and both places, instead of a fault in an NCCL kernel.
Buffer check_device_buffer(const char* call, const char* name, const strata_buffer* buffer,
                           int device);

// sdk::comm::check_pair (same dtype, same device) and check_device_buffer of each.
BufferPair check_device_pair(const char* call, const strata_buffer* send, const strata_buffer* recv,
                             int device);

// alltoallv's arguments: sdk::comm::alltoallv_args (ABI 1.10's struct, the four per-rank arrays
// of `size` entries, every block inside its buffer, not in place) with a CUDA-only device_mask,
// then check_device_buffer's rules for send and recv.
BufferPair check_device_alltoallv(const strata_coll_args& args, int size, int device);

// The NCCL type and op of a checked dtype and op (NCCL has every strata_dtype; AVG is ncclAvg).
ncclDataType_t nccl_type(int32_t dtype);
ncclRedOp_t nccl_op(int32_t op);

}  // namespace strata::allreduce_nccl
