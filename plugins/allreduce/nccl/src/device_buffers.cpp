#include "device_buffers.hpp"

#include <cuda_runtime_api.h>

#include <string>

namespace strata::allreduce_nccl {
namespace {

constexpr uint32_t kCudaOnly = STRATA_DEVICE_BIT(STRATA_DEVICE_CUDA);

[[noreturn]] void unsupported(const char* call, const std::string& message) {
  sdk::fail(STRATA_ERR_UNSUPPORTED, std::string(call) + ": " + message);
}

// Where CUDA says `data` lives: "cuda:N", "host memory" or "memory CUDA does not know".
std::string where_cuda_puts(const void* data, int device, bool* on_device) {
  cudaPointerAttributes attributes{};
  const cudaError_t asked = cudaPointerGetAttributes(&attributes, data);
  if (asked != cudaSuccess) {
    cudaGetLastError();  // clear it, so that no later CUDA call reports it again
    *on_device = false;
    return "memory CUDA does not know (" + std::string(cudaGetErrorName(asked)) + ")";
  }
  const bool device_memory =
      attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
  *on_device = device_memory && attributes.device == device;
  if (!device_memory) return "host memory";
  return "cuda:" + std::to_string(attributes.device);
}

// The rules beyond the SDK's for `buffer`, already checked as `checked`: labelled with this
// rank's device, and CUDA places its data there.
void check_on_device(const char* call, const char* name, const strata_buffer& buffer,
                     const Buffer& checked, int device) {
  const std::string ours = "cuda:" + std::to_string(device);
  if (buffer.device.index != device) {
    unsupported(call, std::string(name) + " is on " + device_name(buffer.device) + "; " +
                          kPluginName + " moves CUDA memory of this rank's device (" + ours +
                          ") only");
  }
  if (checked.count == 0) return;  // no pointer to ask about
  bool on_device = false;
  const std::string found = where_cuda_puts(checked.data, device, &on_device);
  if (!on_device) {
    unsupported(call, std::string(name) + ".data is labelled " + ours + " but CUDA finds it in " +
                          found + "; " + kPluginName + " moves CUDA memory of " + ours + " only");
  }
}

}  // namespace

Buffer check_device_buffer(const char* call, const char* name, const strata_buffer* buffer,
                           int device) {
  const Buffer checked = check_buffer(call, name, buffer, kPluginName, kCudaOnly);
  check_on_device(call, name, *buffer, checked, device);
  return checked;
}

BufferPair check_device_pair(const char* call, const strata_buffer* send_arg,
                             const strata_buffer* recv_arg, int device) {
  const BufferPair pair = check_pair(call, send_arg, recv_arg, kPluginName, kCudaOnly);
  check_on_device(call, "send", *send_arg, pair.send, device);
  check_on_device(call, "recv", *recv_arg, pair.recv, device);
  return pair;
}

BufferPair check_device_alltoallv(const strata_coll_args& args, int size, int device) {
  const BufferPair pair = alltoallv_args(&args, size, kPluginName, kCudaOnly);
  check_on_device("alltoallv", "send", *args.send, pair.send, device);
  check_on_device("alltoallv", "recv", *args.recv, pair.recv, device);
  return pair;
}

ncclDataType_t nccl_type(int32_t dtype) {
  switch (dtype) {
    case STRATA_F32:
      return ncclFloat32;
    case STRATA_F16:
      return ncclFloat16;
    case STRATA_BF16:
      return ncclBfloat16;
    case STRATA_F64:
      return ncclFloat64;
    case STRATA_I32:
      return ncclInt32;
    case STRATA_I64:
      return ncclInt64;
    case STRATA_U8:
      return ncclUint8;
    default:
      sdk::fail(STRATA_ERR_INTERNAL, "nccl_type: unknown dtype " + std::to_string(dtype));
  }
}

ncclRedOp_t nccl_op(int32_t op) {
  switch (op) {
    case STRATA_SUM:
      return ncclSum;
    case STRATA_AVG:
      return ncclAvg;
    case STRATA_MIN:
      return ncclMin;
    case STRATA_MAX:
      return ncclMax;
    default:
      sdk::fail(STRATA_ERR_INTERNAL, "nccl_op: unknown op " + std::to_string(op));
  }
}

}  // namespace strata::allreduce_nccl
