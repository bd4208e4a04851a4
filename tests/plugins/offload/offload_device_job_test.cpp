// strata_offload's choice of where the step runs for a job whose parameters are in CUDA device
// memory (ABI 1.7: the host's device() is CUDA), which needs no device to check: the caps name the
// device for offload_optimizer.device none and the host for cpu, a host job stays on the host,
// and nvme with device shards is refused at init_state, naming the setting, before any copy.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "optim_harness.hpp"

namespace strata::test {
namespace {

// The FakeHost's services, with device() saying CUDA device 0.
class CudaJobHost {
 public:
  CudaJobHost() : api_(*base_.api()) {
    api_.device = [](void*) { return strata_device{STRATA_DEVICE_CUDA, 0}; };
    api_.cuda_stream = [](void*) -> void* { return nullptr; };
  }
  const strata_host_api* api() const { return &api_; }

 private:
  FakeHost base_;
  strata_host_api api_;
};

std::string config(const std::string& offload) {
  return R"({"optimizer": {"type": "AdamW", "params": {"lr": 0.01}}, "offload_optimizer": )" +
         offload + "}";
}

int32_t step_device(const strata_host_api* host, const std::string& offload) {
  const Instance<strata_offload_ops> instance(offload_ops(), host, config(offload));
  EXPECT_EQ(instance.status(), STRATA_OK) << instance.message();
  if (instance.self() == nullptr) return -1;
  strata_offload_caps caps{};
  caps.struct_size = sizeof caps;
  caps.device_type = -1;
  strata_error err = sdk::make_error();
  EXPECT_EQ(offload_ops().query(instance.self(), &caps, &err), STRATA_OK) << err.message;
  return caps.device_type;
}

TEST(OffloadDeviceJob, CapsNameWhereTheStepRuns) {
  CudaJobHost cuda;
  FakeHost host;
  EXPECT_EQ(step_device(cuda.api(), R"({"device": "none"})"), STRATA_DEVICE_CUDA);
  EXPECT_EQ(step_device(cuda.api(), R"({"device": "cpu", "pin_memory": true})"),
            STRATA_DEVICE_HOST);
  EXPECT_EQ(step_device(host.api(), R"({"device": "none"})"), STRATA_DEVICE_HOST);
}

TEST(OffloadDeviceJob, NvmeWithShardsOnADeviceIsRefused) {
  CudaJobHost cuda;
  const std::string dir = std::filesystem::temp_directory_path().string();
  const Instance<strata_offload_ops> offload(
      offload_ops(), cuda.api(), config(R"({"device": "nvme", "nvme_path": ")" + dir + R"("})"));
  ASSERT_EQ(offload.status(), STRATA_OK) << offload.message();
  // The pointers are never read: the placement is refused first.
  float master[4] = {}, grad[4] = {};
  strata_shard shard{};
  shard.struct_size = sizeof shard;
  shard.count = 4;
  shard.master = master;
  shard.grad = grad;
  strata_error err = sdk::make_error();
  EXPECT_EQ(offload_ops().init_state(offload.self(), &shard, 1, &err), STRATA_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(err.message).find("offload_optimizer.device: 'nvme'"), std::string::npos)
      << err.message;
  EXPECT_NE(std::string(err.message).find("CUDA device memory"), std::string::npos)
      << err.message;
}

}  // namespace
}  // namespace strata::test
