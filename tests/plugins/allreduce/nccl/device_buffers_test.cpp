// The plugin's device-buffer checks (plugins/allreduce/nccl/src/device_buffers.cpp, compiled in):
// the label rules refuse host and other-device buffers before any CUDA call, a pointer CUDA does
// not place on this device is refused naming where it is, the SDK's other checks still apply, and
// every dtype and op maps to NCCL's. Runs with or without a device.
#include "device_buffers.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using namespace strata::allreduce_nccl;

strata_buffer labelled(void* data, uint64_t count, int32_t dtype, strata_device device) {
  strata_buffer b{};
  b.struct_size = sizeof b;
  b.data = data;
  b.count = count;
  b.dtype = dtype;
  b.device = device;
  return b;
}

std::string refusal(const strata_buffer& b, strata_status expected_code) {
  try {
    check_device_buffer("allreduce", "send", &b, 0);
  } catch (const strata::sdk::Error& e) {
    EXPECT_EQ(e.code(), expected_code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "the buffer was accepted";
  return "";
}

TEST(DeviceBuffers, HostAndOtherDeviceLabelsAreRefusedNamingBoth) {
  std::vector<float> host(4);
  EXPECT_EQ(refusal(labelled(host.data(), 4, STRATA_F32, {STRATA_DEVICE_HOST, 0}),
                    STRATA_ERR_UNSUPPORTED),
            "allreduce: send is in host memory; allreduce-nccl moves CUDA device memory only");
  EXPECT_EQ(refusal(labelled(host.data(), 4, STRATA_F32, {STRATA_DEVICE_CUDA, 1}),
                    STRATA_ERR_UNSUPPORTED),
            "allreduce: send is on cuda:1; allreduce-nccl moves CUDA memory of this rank's device "
            "(cuda:0) only");
  const strata_buffer send = labelled(nullptr, 0, STRATA_F32, {STRATA_DEVICE_CUDA, 0});
  const strata_buffer recv = labelled(nullptr, 0, STRATA_F32, {STRATA_DEVICE_CUDA, 1});
  try {
    check_device_pair("allgather", &send, &recv, 0);
    ADD_FAILURE() << "buffers on two devices were accepted";
  } catch (const strata::sdk::Error& e) {
    EXPECT_STREQ(e.what(),
                 "allgather: recv is on cuda:1 but send is on cuda:0; both must be on one device");
  }
}

TEST(DeviceBuffers, AHostPointerLabelledCudaIsRefusedNamingWhereItIs) {
  std::vector<float> host(4);
  const std::string message = refusal(labelled(host.data(), 4, STRATA_F32, {STRATA_DEVICE_CUDA, 0}),
                                      STRATA_ERR_UNSUPPORTED);
  // With a driver CUDA calls it host memory; without one it does not know the pointer at all.
  EXPECT_EQ(message.rfind("allreduce: send.data is labelled cuda:0 but CUDA finds it in ", 0), 0u)
      << message;
  EXPECT_NE(message.find("; allreduce-nccl moves CUDA memory of cuda:0 only"), std::string::npos)
      << message;
}

TEST(DeviceBuffers, TheSdkChecksStillApply) {
  EXPECT_EQ(refusal(labelled(nullptr, 4, STRATA_F32, {STRATA_DEVICE_CUDA, 0}),
                    STRATA_ERR_INVALID_ARGUMENT),
            "allreduce: send.data is NULL but send.count is 4");
  EXPECT_EQ(refusal(labelled(nullptr, 0, 42, {STRATA_DEVICE_CUDA, 0}), STRATA_ERR_INVALID_ARGUMENT),
            "allreduce: send.dtype (42) is not a strata_dtype (expected 0..6)");
  strata_buffer small = labelled(nullptr, 0, STRATA_F32, {STRATA_DEVICE_CUDA, 0});
  small.struct_size = 8;
  EXPECT_NE(refusal(small, STRATA_ERR_ABI).find("is smaller than strata_buffer"),
            std::string::npos);
  try {
    check_device_buffer("broadcast", "recv", nullptr, 0);
    ADD_FAILURE() << "NULL was accepted";
  } catch (const strata::sdk::Error& e) {
    EXPECT_STREQ(e.what(), "broadcast: recv is NULL; expected a strata_buffer");
  }
  // Empty buffers need no pointer and ask CUDA nothing.
  const strata_buffer empty = labelled(nullptr, 0, STRATA_BF16, {STRATA_DEVICE_CUDA, 0});
  EXPECT_EQ(check_device_buffer("allreduce", "send", &empty, 0).element_size, 2u);
}

TEST(DeviceBuffers, EveryDtypeAndOpMapsToNccl) {
  EXPECT_EQ(nccl_type(STRATA_F32), ncclFloat32);
  EXPECT_EQ(nccl_type(STRATA_F16), ncclFloat16);
  EXPECT_EQ(nccl_type(STRATA_BF16), ncclBfloat16);
  EXPECT_EQ(nccl_type(STRATA_F64), ncclFloat64);
  EXPECT_EQ(nccl_type(STRATA_I32), ncclInt32);
  EXPECT_EQ(nccl_type(STRATA_I64), ncclInt64);
  EXPECT_EQ(nccl_type(STRATA_U8), ncclUint8);
  EXPECT_EQ(nccl_op(STRATA_SUM), ncclSum);
  EXPECT_EQ(nccl_op(STRATA_AVG), ncclAvg);
  EXPECT_EQ(nccl_op(STRATA_MIN), ncclMin);
  EXPECT_EQ(nccl_op(STRATA_MAX), ncclMax);
}

}  // namespace
