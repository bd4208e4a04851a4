// finalize's placement check (runtime/src/device/device_placement.cpp): every parameter on one device,
// the comm plugin able to move that memory, the offload plugin stepping where it can reach, no
// pre-1.7 plugin handed device memory. Pure: fake devices, no GPU.
#include "device/device_placement.hpp"
#include "error.hpp"

#include <gmock/gmock.h>

#include <string>
#include <vector>

namespace {

using strata::rt::check_device_placement;
using strata::rt::PlacedParam;
using strata::rt::PlacementRules;
using ::testing::HasSubstr;

constexpr strata_device kHost{STRATA_DEVICE_HOST, 0};
constexpr strata_device kCuda0{STRATA_DEVICE_CUDA, 0};
constexpr strata_device kCuda1{STRATA_DEVICE_CUDA, 1};
constexpr uint32_t kHostBit = STRATA_DEVICE_BIT(STRATA_DEVICE_HOST);
constexpr uint32_t kCudaBit = STRATA_DEVICE_BIT(STRATA_DEVICE_CUDA);

PlacementRules rules(uint32_t comm_mask, int32_t offload_device = STRATA_DEVICE_HOST,
                     uint32_t plugin_minor = STRATA_ABI_MINOR) {
  PlacementRules r;
  r.comm_name = "my-comm";
  r.comm_device_mask = comm_mask;
  r.offload_name = "my-offload";
  r.offload_device_type = offload_device;
  r.plugins = {{"sharding", "zero", STRATA_ABI_MINOR},
               {"precision", "amp", STRATA_ABI_MINOR},
               {"offload", "my-offload", plugin_minor}};
  return r;
}

// The message and code of the refusal, or "" when accepted.
std::string refusal(const std::vector<PlacedParam>& params, const PlacementRules& r,
                    strata_status* code = nullptr) {
  try {
    check_device_placement(params, r);
  } catch (const strata::rt::Error& e) {
    if (code != nullptr) *code = e.code();
    return e.what();
  }
  return "";
}

TEST(DevicePlacement, AcceptsWhatTheCommMoves) {
  EXPECT_EQ(check_device_placement({{"W1", kHost}, {"b1", kHost}}, rules(kHostBit)).type,
            STRATA_DEVICE_HOST);
  const strata_device d =
      check_device_placement({{"W1", kCuda1}, {"b1", kCuda1}}, rules(kCudaBit | kHostBit));
  EXPECT_EQ(d.type, STRATA_DEVICE_CUDA);
  EXPECT_EQ(d.index, 1);
  // A 1.7 offload plugin stepping on the host takes device shards (it copies them down itself).
  EXPECT_EQ(refusal({{"W1", kCuda0}}, rules(kCudaBit, STRATA_DEVICE_HOST)), "");
}

TEST(DevicePlacement, CudaParamsOverAHostOnlyCommNameBoth) {
  strata_status code = STRATA_OK;
  EXPECT_EQ(refusal({{"W1", kCuda0}, {"b1", kCuda0}}, rules(kHostBit), &code),
            "finalize: parameter 'W1' is in cuda:0 memory, but comm plugin 'my-comm' moves host "
            "memory only; use allreduce-nccl or allreduce-mpi over a CUDA-aware MPI");
  EXPECT_EQ(code, STRATA_ERR_UNSUPPORTED);
}

TEST(DevicePlacement, HostParamsOverACudaOnlyCommNameBoth) {
  EXPECT_THAT(refusal({{"W1", kHost}}, rules(kCudaBit)),
              HasSubstr("finalize: parameters are in host memory ('W1'), but comm plugin "
                        "'my-comm' moves CUDA device memory only"));
}

TEST(DevicePlacement, TwoDevicesNameTwoParams) {
  strata_status code = STRATA_OK;
  EXPECT_THAT(refusal({{"W1", kCuda0}, {"b1", kCuda0}, {"W2", kCuda1}}, rules(kCudaBit), &code),
              HasSubstr("parameter 'W1' is in cuda:0 memory but parameter 'W2' is in cuda:1 "
                        "memory; register every parameter on the same device"));
  EXPECT_EQ(code, STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(refusal({{"W1", kHost}, {"b1", kCuda0}}, rules(kCudaBit | kHostBit)),
              HasSubstr("parameter 'W1' is in host memory but parameter 'b1' is in cuda:0 memory"));
}

TEST(DevicePlacement, OffloadStepOnTheDeviceNeedsDeviceParams) {
  EXPECT_THAT(refusal({{"W1", kHost}}, rules(kHostBit, STRATA_DEVICE_CUDA)),
              HasSubstr("offload plugin 'my-offload' runs its step on the CUDA device"));
}

TEST(DevicePlacement, PluginsOlderThan17GetNoDeviceMemory) {
  EXPECT_THAT(refusal({{"W1", kCuda0}}, rules(kCudaBit, STRATA_DEVICE_HOST, 6)),
              HasSubstr("offload plugin 'my-offload' was built for ABI 1.6, which knows host "
                        "memory only"));
  EXPECT_EQ(refusal({{"W1", kHost}}, rules(kHostBit, STRATA_DEVICE_HOST, 6)), "");
}

TEST(DevicePlacement, MemoryReportLocation) {
  EXPECT_EQ(strata::rt::memory_location(kCuda1), STRATA_MEM_DEVICE);
  EXPECT_EQ(strata::rt::memory_location(kHost), STRATA_MEM_HOST);
}

}  // namespace
