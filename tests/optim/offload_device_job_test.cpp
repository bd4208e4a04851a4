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

void* create(const strata_host_api* host, const std::string& config, std::string* message) {
  strata_plugin_create_args args{};
  args.struct_size = sizeof(args);
  args.config_json = config.c_str();
  args.host = host;
  void* self = nullptr;
  strata_error err = sdk::make_error();
  if (offload_ops().create(&args, &self, &err) != STRATA_OK) *message = err.message;
  return self;
}

std::string config(const std::string& offload) {
  return R"({"optimizer": {"type": "AdamW", "params": {"lr": 0.01}}, "offload_optimizer": )" +
         offload + "}";
}

int32_t step_device(const strata_host_api* host, const std::string& offload) {
  std::string message;
  void* self = create(host, config(offload), &message);
  EXPECT_NE(self, nullptr) << message;
  if (self == nullptr) return -1;
  strata_offload_caps caps{};
  caps.struct_size = sizeof caps;
  caps.device_type = -1;
  strata_error err = sdk::make_error();
  EXPECT_EQ(offload_ops().query(self, &caps, &err), STRATA_OK) << err.message;
  offload_ops().destroy(self);
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
  std::string message;
  void* self = create(cuda.api(), config(R"({"device": "nvme", "nvme_path": ")" + dir + R"("})"),
                      &message);
  ASSERT_NE(self, nullptr) << message;
  // The pointers are never read: the placement is refused first.
  float master[4] = {}, grad[4] = {};
  strata_shard shard{};
  shard.struct_size = sizeof shard;
  shard.count = 4;
  shard.master = master;
  shard.grad = grad;
  strata_error err = sdk::make_error();
  EXPECT_EQ(offload_ops().init_state(self, &shard, 1, &err), STRATA_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(err.message).find("offload_optimizer.device: 'nvme'"), std::string::npos)
      << err.message;
  EXPECT_NE(std::string(err.message).find("CUDA device memory"), std::string::npos)
      << err.message;
  offload_ops().destroy(self);
}

}  // namespace
}  // namespace strata::test
