// strata/comm/collective_args.hpp with a plugin's own device_mask (ABI 1.7): a comm plugin accepts
// the memory it declares and refuses the rest naming both; the default stays host only.
#include <strata/comm/collective_args.hpp>

#include <gmock/gmock.h>

#include <functional>
#include <string>

namespace {

using namespace strata::sdk::comm;

constexpr uint32_t kCudaOnly = STRATA_DEVICE_BIT(STRATA_DEVICE_CUDA);
constexpr uint32_t kBoth = STRATA_DEVICE_BIT(STRATA_DEVICE_HOST) | kCudaOnly;

strata_buffer on(int32_t type, int32_t index) {
  static float x[4];
  strata_buffer b = strata::sdk::host_buffer(x, 4, STRATA_F32);
  b.device = strata_device{type, index};
  return b;
}

std::string refusal(const std::function<void()>& body, strata_status* code = nullptr) {
  try {
    body();
  } catch (const strata::sdk::Error& e) {
    if (code != nullptr) *code = e.code();
    return e.what();
  }
  return "";
}

TEST(CollectiveArgsDevice, APluginMovesWhatItDeclares) {
  const strata_buffer cuda = on(STRATA_DEVICE_CUDA, 0);
  const strata_buffer host = on(STRATA_DEVICE_HOST, 0);
  EXPECT_EQ(check_buffer("allreduce", "send", &cuda, "nccl", kCudaOnly).count, 4u);
  EXPECT_EQ(check_buffer("allreduce", "send", &host, "mpi", kBoth).count, 4u);
  strata_status code = STRATA_OK;
  EXPECT_EQ(refusal([&] { check_buffer("allreduce", "send", &host, "nccl", kCudaOnly); }, &code),
            "allreduce: send is in host memory; nccl moves CUDA device memory only");
  EXPECT_EQ(code, STRATA_ERR_UNSUPPORTED);
  // The default is host only, as before ABI 1.7.
  EXPECT_EQ(refusal([&] { check_buffer("broadcast", "buf", &cuda, "gloo"); }),
            "broadcast: buf is on cuda:0; gloo moves host memory only");
}

TEST(CollectiveArgsDevice, SendAndRecvOnOneDevice) {
  const strata_buffer a = on(STRATA_DEVICE_CUDA, 0);
  const strata_buffer b = on(STRATA_DEVICE_CUDA, 1);
  EXPECT_EQ(refusal([&] { check_pair("allgather", &a, &b, "nccl", kCudaOnly); }),
            "allgather: recv is on cuda:1 but send is on cuda:0; both must be on one device");
  const strata_buffer h = on(STRATA_DEVICE_HOST, 0);
  EXPECT_EQ(refusal([&] { check_pair("allreduce", &h, &a, "mpi", kBoth); }),
            "allreduce: recv is on cuda:0 but send is on host; both must be on one device");
}

}  // namespace
