// Which device a rank takes and the placement errors (plugins/allreduce/nccl/src/device_choice.cpp,
// compiled in), for any device count: choose_device_among takes the count cudaGetDeviceCount would
// give, so the errors of a GPU host (more local ranks than devices, a configured ordinal out of
// range) are checked on machines without one.
#include "device_choice.hpp"

#include <strata/plugin.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

using namespace strata::allreduce_nccl;

LaunchEnv placed(int rank, int local_rank, int local_size) {
  LaunchEnv env;
  env.rank = rank;
  env.size = 16;
  env.local_rank = local_rank;
  env.local_size = local_size;
  return env;
}

Config config(int device = -1, bool share = false) {
  return Config{device, Bootstrap::kAuto, 600, share};
}

std::string refusal(const LaunchEnv& env, const Config& c, int visible,
                    const std::string& count_failure = "") {
  try {
    choose_device_among(env, c, visible, count_failure);
  } catch (const strata::sdk::Error& e) {
    EXPECT_EQ(e.code(), STRATA_ERR_UNSUPPORTED);
    return e.what();
  }
  ADD_FAILURE() << "a device was chosen";
  return "";
}

class DeviceChoiceTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("CUDA_VISIBLE_DEVICES"); }
};

TEST_F(DeviceChoiceTest, EachLocalRankTakesItsOwnDevice) {
  for (int local = 0; local < 4; ++local) {
    const DeviceChoice choice = choose_device_among(placed(4 + local, local, 4), config(), 8, "");
    EXPECT_EQ(choice.device, local);
    EXPECT_EQ(choice.visible, 8);
    EXPECT_FALSE(choice.shared);
  }
}

TEST_F(DeviceChoiceTest, NoDeviceNamesTheRankAndWhy) {
  EXPECT_EQ(refusal(placed(5, 1, 2), config(), 0,
                    "cudaErrorNoDevice: no CUDA-capable device is detected"),
            "allreduce-nccl: rank 5 (local rank 1): no CUDA device visible (cudaGetDeviceCount: "
            "cudaErrorNoDevice: no CUDA-capable device is detected)");
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  EXPECT_EQ(refusal(placed(0, 0, 1), config(), 0),
            "allreduce-nccl: rank 0 (local rank 0): no CUDA device visible (cudaGetDeviceCount: 0 "
            "devices) (CUDA_VISIBLE_DEVICES=)");
}

TEST_F(DeviceChoiceTest, MoreLocalRanksThanDevicesNamesTheCounts) {
  EXPECT_EQ(refusal(placed(3, 3, 4), config(), 2),
            "allreduce-nccl: rank 3 (local rank 3): 4 ranks on this host but 2 CUDA device(s) "
            "visible; NCCL needs one device per rank (start at most 2 ranks per host, or set "
            "\"share_device\": true for a slow test setup)");
  // Every local rank refuses, not only those past the last device.
  EXPECT_NE(refusal(placed(0, 0, 4), config(), 2).find("4 ranks on this host but 2"),
            std::string::npos);
}

TEST_F(DeviceChoiceTest, SharingPutsRanksRoundRobinAndSaysSo) {
  const DeviceChoice first = choose_device_among(placed(0, 0, 3), config(-1, true), 2, "");
  const DeviceChoice third = choose_device_among(placed(2, 2, 3), config(-1, true), 2, "");
  EXPECT_EQ(first.device, 0);
  EXPECT_EQ(third.device, 0);
  EXPECT_TRUE(first.shared && third.shared);
  // Enough devices: sharing allowed but not needed.
  EXPECT_FALSE(choose_device_among(placed(0, 0, 2), config(-1, true), 2, "").shared);
}

TEST_F(DeviceChoiceTest, AConfiguredDeviceMustExist) {
  EXPECT_EQ(choose_device_among(placed(0, 0, 1), config(1), 2, "").device, 1);
  EXPECT_EQ(refusal(placed(1, 1, 2), config(2), 2),
            "allreduce-nccl: rank 1 (local rank 1): config device 2, but 2 CUDA device(s) visible; "
            "expected an ordinal below 2");
}

}  // namespace
