// GPU (label gpu): the offload and amp plugins with shards in CUDA device memory (ABI 1.7: the
// host's device() is CUDA), against the same plugins on host shards:
//  - offload_optimizer.device none steps on the device with the shared fused CUDA kernels: masters
//    within 1e-6 relative of the CPU step, f16 model copies within one f16 rounding;
//  - device cpu steps on the CPU through the pinned pipeline, many pieces: bit for bit the CPU
//    step (the same kernels on the same values), state read back through read_state alike, and a
//    write_state/read_state round trip;
//  - amp's grad_stats and casts on device buffers against the CPU ones.
// Skips with "no CUDA device" without one.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gpu_env.hpp"
#include "optim_harness.hpp"
#include "strata/half.hpp"

namespace strata::test {
namespace {

// A host table that says the job is on CUDA device 0: the FakeHost's services, plus device(),
// cuda_stream() (the legacy default stream) and STRATA_MEM_DEVICE allocations (cudaMalloc).
class DeviceHost {
 public:
  DeviceHost() : api_(*base_.api()) {
    current_ = this;
    api_.device = [](void*) { return strata_device{STRATA_DEVICE_CUDA, 0}; };
    api_.cuda_stream = [](void*) -> void* { return nullptr; };
    api_.alloc_bytes_at = [](void* ctx, size_t bytes, size_t alignment, int32_t category,
                             int32_t location) -> void* {
      if (location != STRATA_MEM_DEVICE) {
        return current_->base_.api()->alloc_bytes_at(ctx, bytes, alignment, category, location);
      }
      void* p = nullptr;
      if (cudaMalloc(&p, bytes) != cudaSuccess) return nullptr;
      current_->device_.insert(p);
      return p;
    };
    api_.free_bytes = [](void* ctx, void* p) {
      if (current_->device_.erase(p) > 0) {
        cudaFree(p);
        return;
      }
      current_->base_.api()->free_bytes(ctx, p);
    };
  }
  ~DeviceHost() { current_ = nullptr; }
  DeviceHost(const DeviceHost&) = delete;
  DeviceHost& operator=(const DeviceHost&) = delete;
  const strata_host_api* api() const { return &api_; }

 private:
  static inline DeviceHost* current_ = nullptr;
  FakeHost base_;
  strata_host_api api_;
  std::set<void*> device_;
};

void cuda_ok(cudaError_t rc) { ASSERT_EQ(rc, cudaSuccess) << cudaGetErrorString(rc); }

// The shards of a ShardSet mirrored in device memory (master, grad, and an f16 model copy).
class DeviceShards {
 public:
  explicit DeviceShards(ShardSet& host) : host_(host) {
    for (size_t i = 0; i < host.size(); ++i) {
      strata_shard s = host.data()[i];
      float *m = nullptr, *g = nullptr;
      void* model = nullptr;
      cudaMalloc(&m, s.count * 4 + 4);
      cudaMalloc(&g, s.count * 4 + 4);
      cudaMalloc(&model, s.count * 2 + 2);
      ptrs_.push_back(m);
      ptrs_.push_back(g);
      ptrs_.push_back(model);
      s.master = m;
      s.grad = g;
      s.model = model;
      s.model_dtype = STRATA_F16;
      shards_.push_back(s);
    }
    upload();
  }
  ~DeviceShards() {
    for (void* p : ptrs_) cudaFree(p);
  }
  void upload() {
    for (size_t i = 0; i < shards_.size(); ++i) {
      cudaMemcpy(shards_[i].master, host_.master(i).data(), shards_[i].count * 4,
                 cudaMemcpyHostToDevice);
    }
    upload_grads();
  }
  void upload_grads() {
    for (size_t i = 0; i < shards_.size(); ++i) {
      cudaMemcpy(shards_[i].grad, host_.grad(i).data(), shards_[i].count * 4,
                 cudaMemcpyHostToDevice);
    }
  }
  std::vector<float> master(size_t i) const {
    std::vector<float> v(shards_[i].count);
    cudaMemcpy(v.data(), shards_[i].master, v.size() * 4, cudaMemcpyDeviceToHost);
    return v;
  }
  std::vector<uint16_t> model(size_t i) const {
    std::vector<uint16_t> v(shards_[i].count);
    cudaMemcpy(v.data(), shards_[i].model, v.size() * 2, cudaMemcpyDeviceToHost);
    return v;
  }
  const strata_shard* data() const { return shards_.data(); }
  size_t size() const { return shards_.size(); }

 private:
  ShardSet& host_;
  std::vector<strata_shard> shards_;
  std::vector<void*> ptrs_;
};

void fill(ShardSet& set, uint32_t seed, bool masters = true) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (size_t i = 0; i < set.size(); ++i) {
    if (masters) {
      for (float& x : set.master(i)) x = n(rng);
    }
    for (float& x : set.grad(i)) x = 0.1f * n(rng);
  }
}

std::string offload_config(const std::string& device, uint64_t sub_group_size) {
  return R"({"optimizer": {"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.01}},
             "offload_optimizer": {"device": ")" + device + R"(", "pin_memory": true},
             "sub_group_size": )" + std::to_string(sub_group_size) + "}";
}

const std::vector<uint64_t> kSizes = {1000, 37, 4096, 3, 70000, 5};

// Steps a CPU instance on host shards and a device instance on their device mirror `steps`
// times with new gradients each step; calls check(host set, device shards) at the end.
template <class Check>
void run_pair(const std::string& device_config, int steps, Check&& check) {
  FakeHost plain;
  DeviceHost on_device;
  ShardSet cpu(kSizes), gpu(kSizes);
  fill(cpu, 7);
  fill(gpu, 7);
  DeviceShards mirror(gpu);
  const strata_offload_ops& ops = offload_ops();
  const Instance<strata_offload_ops> on_host(ops, plain.api(), offload_config("cpu", 1'000'000'000));
  const Instance<strata_offload_ops> on_gpu(ops, on_device.api(), device_config);
  ASSERT_EQ(on_host.status(), STRATA_OK) << on_host.message();
  ASSERT_EQ(on_gpu.status(), STRATA_OK) << on_gpu.message();
  void* a = on_host.self();
  void* b = on_gpu.self();
  strata_error err = sdk::make_error();
  ASSERT_EQ(ops.init_state(a, cpu.data(), cpu.size(), &err), STRATA_OK) << err.message;
  ASSERT_EQ(ops.init_state(b, mirror.data(), mirror.size(), &err), STRATA_OK) << err.message;
  for (int t = 1; t <= steps; ++t) {
    fill(cpu, 100 + t, false);  // new gradients, alike on both sides
    fill(gpu, 100 + t, false);
    mirror.upload_grads();
    const strata_step_args args = sdk::make_step_args(static_cast<uint64_t>(t), 0.5, 1.0);
    ASSERT_EQ(ops.step(a, cpu.data(), cpu.size(), &args, &err), STRATA_OK) << err.message;
    ASSERT_EQ(ops.step(b, mirror.data(), mirror.size(), &args, &err), STRATA_OK) << err.message;
  }
  cuda_ok(cudaDeviceSynchronize());
  check(ops, a, b, cpu, mirror);
}

TEST(OffloadGpu, DeviceNoneStepsOnTheDeviceLikeTheCpu) {
  STRATA_REQUIRE_GPU();
  strata_offload_caps caps{};
  caps.struct_size = sizeof caps;
  run_pair(offload_config("none", 1'000'000'000), 4,
           [&](const strata_offload_ops& ops, void*, void* b, ShardSet& cpu, DeviceShards& gpu) {
             strata_error err = sdk::make_error();
             ASSERT_EQ(ops.query(b, &caps, &err), STRATA_OK);
             EXPECT_EQ(caps.device_type, STRATA_DEVICE_CUDA);
             for (size_t i = 0; i < cpu.size(); ++i) {
               const std::vector<float> got = gpu.master(i);
               const std::vector<uint16_t> model = gpu.model(i);
               for (size_t k = 0; k < got.size(); ++k) {
                 const float want = cpu.master(i)[k];
                 ASSERT_LE(std::fabs(got[k] - want), 1e-6f * std::max(1.0f, std::fabs(want)))
                     << "shard " << i << " element " << k;
                 // The model copy is the device master rounded once.
                 ASSERT_EQ(model[k], float_to_f16(got[k])) << "shard " << i << " element " << k;
               }
             }
           });
}

TEST(OffloadGpu, DeviceCpuPipelineIsTheCpuStepBitForBit) {
  STRATA_REQUIRE_GPU();
  // sub_group_size 4096: the 75141 elements make 19 pieces through 3 staging buffers.
  run_pair(offload_config("cpu", 4096), 3,
           [&](const strata_offload_ops& ops, void* a, void* b, ShardSet& cpu, DeviceShards& gpu) {
             strata_error err = sdk::make_error();
             for (size_t i = 0; i < cpu.size(); ++i) {
               const std::vector<float> got = gpu.master(i);
               ASSERT_EQ(std::memcmp(got.data(), cpu.master(i).data(), got.size() * 4), 0)
                   << "shard " << i;
               const std::vector<uint16_t> model = gpu.model(i);
               for (size_t k = 0; k < got.size(); ++k) {
                 ASSERT_EQ(model[k], float_to_f16(got[k])) << "shard " << i << " element " << k;
               }
               // State read back by range across piece boundaries, both slots.
               for (uint32_t slot = 0; slot < 2; ++slot) {
                 std::vector<float> x(cpu.data()[i].count), y(x.size());
                 strata_state_io_args io{sizeof(strata_state_io_args), static_cast<uint32_t>(i),
                                         slot, 0, x.size(), x.data()};
                 ASSERT_EQ(ops.read_state(a, &io, &err), STRATA_OK) << err.message;
                 io.data = y.data();
                 ASSERT_EQ(ops.read_state(b, &io, &err), STRATA_OK) << err.message;
                 ASSERT_EQ(std::memcmp(x.data(), y.data(), x.size() * 4), 0) << "slot " << slot;
                 // Overwrite a range that spans pieces and read it back.
                 if (x.size() < 5000) continue;
                 std::vector<float> z(5000, 0.25f), back(5000);
                 io = {sizeof(strata_state_io_args), static_cast<uint32_t>(i), slot, 3000, 5000,
                       z.data()};
                 ASSERT_EQ(ops.write_state(b, &io, &err), STRATA_OK) << err.message;
                 io.data = back.data();
                 ASSERT_EQ(ops.read_state(b, &io, &err), STRATA_OK) << err.message;
                 EXPECT_EQ(back, z);
               }
             }
           });
}

TEST(AmpGpu, GradStatsAndCastsOnDeviceBuffers) {
  STRATA_REQUIRE_GPU();
  FakeHost plain;
  DeviceHost on_device;
  const strata_precision_ops& ops = amp_ops();
  const std::string config = R"({"fp16": {"enabled": true}})";
  const Instance<strata_precision_ops> on_host(ops, plain.api(), config);
  const Instance<strata_precision_ops> on_gpu(ops, on_device.api(), config);
  ASSERT_EQ(on_host.status(), STRATA_OK) << on_host.message();
  ASSERT_EQ(on_gpu.status(), STRATA_OK) << on_gpu.message();
  void* cpu = on_host.self();
  void* gpu = on_gpu.self();
  ShardSet host(kSizes);
  fill(host, 3);
  DeviceShards mirror(host);
  strata_error err = sdk::make_error();
  strata_grad_stats a{sizeof(strata_grad_stats), 0, 0.0}, b = a;
  ASSERT_EQ(ops.grad_stats(cpu, host.data(), host.size(), &a, &err), STRATA_OK) << err.message;
  ASSERT_EQ(ops.grad_stats(gpu, mirror.data(), mirror.size(), &b, &err), STRATA_OK) << err.message;
  EXPECT_EQ(b.nonfinite, 0);
  EXPECT_NEAR(b.sum_sq, a.sum_sq, 1e-12 * a.sum_sq);
  // An inf in the last shard's last element.
  const float inf = INFINITY;
  const strata_shard& last = mirror.data()[mirror.size() - 1];
  cuda_ok(cudaMemcpy(last.grad + last.count - 1, &inf, 4, cudaMemcpyHostToDevice));
  ASSERT_EQ(ops.grad_stats(gpu, mirror.data(), mirror.size(), &b, &err), STRATA_OK) << err.message;
  EXPECT_EQ(b.nonfinite, 1);
  // f32 -> f16 -> f32 on the device: the CPU's bits.
  const strata_shard& big = mirror.data()[4];
  strata_buffer src = sdk::host_buffer(big.master, big.count, STRATA_F32);
  strata_buffer half_buf = sdk::host_buffer(big.model, big.count, STRATA_F16);
  src.device = half_buf.device = strata_device{STRATA_DEVICE_CUDA, 0};
  ASSERT_EQ(ops.cast(gpu, &src, &half_buf, &err), STRATA_OK) << err.message;
  cuda_ok(cudaDeviceSynchronize());
  const std::vector<uint16_t> got = mirror.model(4);
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k], float_to_f16(host.master(4)[k])) << "element " << k;
  }
  // Host to device is refused, naming dst.device.
  strata_buffer host_src = sdk::host_buffer(host.master(4).data(), big.count, STRATA_F32);
  EXPECT_EQ(ops.cast(gpu, &host_src, &half_buf, &err), STRATA_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(err.message).find("dst.device"), std::string::npos) << err.message;
}

}  // namespace
}  // namespace strata::test
