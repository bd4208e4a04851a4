// Argument checks for CUDA buffers. The SDK's strata/comm/collective_args.hpp checks host buffers
// (its check_buffer refuses device memory); this is its device counterpart, returning the same
// sdk::comm::Buffer so that the SDK's count, op, root, block and in-place checks apply unchanged.
#pragma once

#include <strata/comm/collective_args.hpp>

#include <nccl.h>

namespace strata::allreduce_nccl {

using namespace sdk::comm;

// Named in the message for a buffer that is not CUDA memory of this rank's device.
inline constexpr char kPluginName[] = "allreduce-nccl";

// As sdk::comm::check_buffer, but the buffer must be labelled cuda:`device` and, when it holds
// elements, CUDA must know its data pointer as memory of that device (device or managed memory):
// a host pointer, or one of another device, is STRATA_ERR_UNSUPPORTED naming the buffer and both
// devices, instead of a fault inside an NCCL kernel.
Buffer check_device_buffer(const char* call, const char* name, const strata_buffer* buffer, int device);

// check_device_buffer of "send" and "recv", of the same dtype.
BufferPair check_device_pair(const char* call, const strata_buffer* send, const strata_buffer* recv,
                             int device);

// The NCCL type and op of a checked dtype and op (NCCL has every strata_dtype; AVG is ncclAvg).
ncclDataType_t nccl_type(int32_t dtype);
ncclRedOp_t nccl_op(int32_t op);

}  // namespace strata::allreduce_nccl
