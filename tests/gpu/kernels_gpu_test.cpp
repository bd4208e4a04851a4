// The shared CUDA kernels on a device against the CPU kernels they reproduce: casts bit for bit
// against the amp plugin's, the overflow flag and squared norm against amp's grad_stats (the
// flag exactly, the sum within 1e-12, the same bits on every run), and the fused optimizers
// within 1e-6 relative of the offload plugin's kernels (and bit for bit equal to element_math.hpp
// on the host). Plain C++ through strata_common/cuda/kernels.hpp, as plugins call it. Every test skips
// with "no CUDA device: ..." where there is none.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <strata_common/element_math.hpp>
#include <strata_common/cuda/kernels.hpp>
#include <strata/plugin.hpp>
#include <vector>

#include <strata_common/cpu_isa.hpp>
#include "gpu_env.hpp"
#include "kernel_references.hpp"

namespace strata::test::kernels {
namespace {

namespace math = cuda::math;

void check(int rc, const std::string& what) {
  if (rc != 0) throw std::runtime_error(what + ": " + cuda::error_string(rc));
}
void check(cudaError_t rc, const std::string& what) { check(static_cast<int>(rc), what); }

// `n` elements of T on the device (plus one, so that tests can start at element 1 to reach
// the kernels' unaligned path).
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n) : n_(n) {
    check(cudaMalloc(&p_, (n + 1) * sizeof(T)), "cudaMalloc");
  }
  explicit DeviceArray(const std::vector<T>& host, std::size_t offset = 0)
      : DeviceArray(host.size() + offset) {
    upload(host, offset);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(p_); }

  T* get(std::size_t offset = 0) const { return p_ + offset; }
  void upload(const std::vector<T>& host, std::size_t offset = 0) {
    check(cudaMemcpy(p_ + offset, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
          "upload");
  }
  std::vector<T> download(std::size_t n, std::size_t offset = 0) const {
    check(cudaDeviceSynchronize(), "kernels");
    std::vector<T> host(n);
    check(cudaMemcpy(host.data(), p_ + offset, n * sizeof(T), cudaMemcpyDeviceToHost),
          "download");
    return host;
  }

 private:
  T* p_ = nullptr;
  std::size_t n_;
};

// ---- casts ----------------------------------------------------------------------------------

// Widening every pattern, and narrowing special and random f32s, at offset 0 (packed path) and 1
// (element by element).
TEST(GpuCast, BitwiseAsAmp) {
  STRATA_REQUIRE_GPU();
  const amp::Kernels& k = amp::portable_kernels();
  const std::vector<uint16_t> halves = all_half_patterns();
  const std::vector<float> values = f32_samples(1 << 20, 9);
  for (std::size_t offset : {0, 1}) {
    SCOPED_TRACE("offset " + std::to_string(offset));
    for (strata_dtype half : {STRATA_F16, STRATA_BF16}) {
      SCOPED_TRACE(sdk::dtype_name(half));
      const DeviceArray<uint16_t> h(halves, offset);
      const DeviceArray<float> wide(halves.size() + offset);
      check(cuda::cast(h.get(offset), half, wide.get(offset), STRATA_F32, halves.size(),
                       nullptr),
            "cast widen");
      const std::vector<float> got = wide.download(halves.size(), offset);
      const std::vector<float> want = amp_widen(k, half, halves);
      for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(bits(got[i]), bits(want[i])) << "pattern 0x" << std::hex << i;
      }
      const DeviceArray<float> f(values, offset);
      const DeviceArray<uint16_t> narrow(values.size() + offset);
      check(cuda::cast(f.get(offset), STRATA_F32, narrow.get(offset), half, values.size(),
                       nullptr),
            "cast narrow");
      const std::vector<uint16_t> got_n = narrow.download(values.size(), offset);
      const std::vector<uint16_t> want_n = amp_narrow(k, half, values);
      for (std::size_t i = 0; i < got_n.size(); ++i) {
        ASSERT_EQ(got_n[i], want_n[i]) << "f32 0x" << std::hex << bits(values[i]);
      }
    }
  }
}

TEST(GpuCast, RefusesHalfToHalfAndNull) {
  STRATA_REQUIRE_GPU();
  const DeviceArray<uint16_t> a(16);
  EXPECT_EQ(cuda::cast(a.get(), STRATA_F16, a.get(), STRATA_BF16, 16, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cuda::cast(nullptr, STRATA_F32, a.get(), STRATA_F16, 16, nullptr),
            cudaErrorInvalidValue);
}

// ---- accumulate, scale, fill_zero ---------------------------------------------------------------

float host_load(strata_dtype d, const std::vector<uint16_t>& h, const std::vector<float>& f,
                std::size_t i) {
  if (d == STRATA_F32) return f[i];
  return d == STRATA_F16 ? math::f16_to_f32(h[i]) : math::bf16_to_f32(h[i]);
}

TEST(GpuElementwise, AccumulateAndScaleAsElementMath) {
  STRATA_REQUIRE_GPU();
  constexpr std::size_t kN = 100003;
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> a32(kN), b32(kN);
  for (float& x : a32) x = normal(rng);
  for (float& x : b32) x = normal(rng);
  std::vector<uint16_t> a16(kN), b16(kN);
  for (strata_dtype dd : {STRATA_F32, STRATA_F16, STRATA_BF16}) {
    for (strata_dtype sd : {STRATA_F32, STRATA_F16, STRATA_BF16}) {
      SCOPED_TRACE(std::string(sdk::dtype_name(dd)) + " += " + sdk::dtype_name(sd));
      for (std::size_t i = 0; i < kN; ++i) {
        a16[i] = dd == STRATA_BF16 ? math::f32_to_bf16(a32[i]) : math::f32_to_f16(a32[i]);
        b16[i] = sd == STRATA_BF16 ? math::f32_to_bf16(b32[i]) : math::f32_to_f16(b32[i]);
      }
      const DeviceArray<float> df(a32), sf(b32);
      const DeviceArray<uint16_t> dh(a16), sh(b16);
      void* dst = dd == STRATA_F32 ? static_cast<void*>(df.get()) : dh.get();
      const void* src = sd == STRATA_F32 ? static_cast<const void*>(sf.get()) : sh.get();
      check(cuda::accumulate(dst, dd, src, sd, kN, nullptr), "accumulate");
      check(cuda::scale(dst, dd, 0.375f, kN, nullptr), "scale");
      const auto got32 = df.download(kN);
      const auto got16 = dh.download(kN);
      for (std::size_t i = 0; i < kN; ++i) {
        const float sum = math::accumulated(host_load(dd, a16, a32, i), host_load(sd, b16, b32, i));
        float want = 0;
        if (dd == STRATA_F32) {
          want = math::scaled(sum, 0.375f);
          ASSERT_EQ(bits(got32[i]), bits(want)) << i;
        } else {
          const uint16_t rounded =
              dd == STRATA_F16 ? math::f32_to_f16(sum) : math::f32_to_bf16(sum);
          const float back = host_load(dd, {rounded}, {}, 0);
          const float scaled = math::scaled(back, 0.375f);
          const uint16_t want16 =
              dd == STRATA_F16 ? math::f32_to_f16(scaled) : math::f32_to_bf16(scaled);
          ASSERT_EQ(got16[i], want16) << i;
        }
      }
    }
  }
  const DeviceArray<float> z(a32);
  check(cuda::fill_zero(z.get(), kN * sizeof(float), nullptr), "fill_zero");
  for (float x : z.download(kN)) ASSERT_EQ(bits(x), 0u);
}

// ---- grad stats -------------------------------------------------------------------------------

// grad_stats over f32 host tensors, each uploaded to element `offset` of its own buffer.
cuda::DeviceGradStats device_stats(const std::vector<std::vector<float>>& tensors,
                                   std::size_t offset = 0) {
  std::vector<std::unique_ptr<DeviceArray<float>>> arrays;
  std::vector<cuda::DeviceTensor> table;
  for (const auto& t : tensors) {
    arrays.push_back(std::make_unique<DeviceArray<float>>(t, offset));
    table.push_back({arrays.back()->get(offset), t.size()});
  }
  const std::size_t bytes = cuda::grad_stats_workspace_bytes(table.data(), table.size());
  const DeviceArray<char> workspace(bytes);
  const DeviceArray<cuda::DeviceGradStats> out(1);
  check(cuda::grad_stats(table.data(), table.size(), STRATA_F32, workspace.get(), out.get(),
                         nullptr),
        "grad_stats");
  return out.download(1)[0];
}

std::vector<std::vector<float>> stats_tensors(uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::uniform_int_distribution<std::size_t> size(0, 3000);
  std::vector<std::vector<float>> out;
  // More tensors than one table holds (128), and tensors of several chunks (65536 elements).
  for (int i = 0; i < 300; ++i) out.emplace_back(size(rng));
  for (std::size_t n : {std::size_t{65536}, std::size_t{65537}, std::size_t{3 * 65536 + 5}}) {
    out.emplace_back(n);
  }
  for (auto& t : out) {
    for (float& x : t) x = normal(rng);
  }
  return out;
}

void expect_stats(const cuda::DeviceGradStats& got, const amp::GradStats& want) {
  EXPECT_EQ(got.nonfinite != 0, want.nonfinite);
  EXPECT_EQ(got.reserved, 0);
  if (want.nonfinite) {
    EXPECT_FALSE(std::isfinite(got.sum_sq));
  } else {
    EXPECT_NEAR(got.sum_sq, want.sum_sq, 1e-12 * want.sum_sq);
  }
}

TEST(GpuGradStats, FiniteSumMatchesAmpAndRepeatsBitwise) {
  STRATA_REQUIRE_GPU();
  const auto tensors = stats_tensors(21);
  const amp::GradStats want = amp_grad_stats(tensors);
  for (std::size_t offset : {0, 1}) {
    const cuda::DeviceGradStats first = device_stats(tensors, offset);
    expect_stats(first, want);
    const cuda::DeviceGradStats again = device_stats(tensors, offset);
    EXPECT_EQ(std::memcmp(&first.sum_sq, &again.sum_sq, sizeof(double)), 0)
        << "not deterministic: " << first.sum_sq << " then " << again.sum_sq;
  }
}

TEST(GpuGradStats, EveryNonFiniteKindIsFlagged) {
  STRATA_REQUIRE_GPU();
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN(), from_bits(0x7f800001u)}) {
    auto tensors = stats_tensors(22);
    tensors.back()[2 * 65536 + 3] = bad;  // in a later table, not in the first chunk
    expect_stats(device_stats(tensors), amp_grad_stats(tensors));
  }
}

// One tensor of more chunks than a table holds (2048): the table is launched full and the
// tensor goes on in the next one.
TEST(GpuGradStats, TensorLargerThanOneLaunch) {
  STRATA_REQUIRE_GPU();
  std::vector<std::vector<float>> tensors(1, std::vector<float>(2048 * 65536 + 12345));
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& x : tensors[0]) x = uniform(rng);
  expect_stats(device_stats(tensors), amp_grad_stats(tensors));
  tensors[0].back() = std::numeric_limits<float>::infinity();  // in the second launch
  expect_stats(device_stats(tensors), amp_grad_stats(tensors));
}

TEST(GpuGradStats, HalfGradients) {
  STRATA_REQUIRE_GPU();
  const amp::Kernels& k = amp::portable_kernels();
  const std::vector<uint16_t> halves = all_half_patterns();
  for (strata_dtype dtype : {STRATA_F16, STRATA_BF16}) {
    SCOPED_TRACE(sdk::dtype_name(dtype));
    const uint16_t exp_mask = dtype == STRATA_F16 ? 0x7c00 : 0x7f80;
    std::vector<uint16_t> finite;
    for (uint16_t h : halves) {
      if ((h & exp_mask) != exp_mask) finite.push_back(h);
    }
    const std::vector<uint16_t>* const sets[] = {&halves, &finite};
    for (const std::vector<uint16_t>* set : sets) {
      const DeviceArray<uint16_t> data(*set);
      const cuda::DeviceTensor table[] = {{data.get(), set->size()}, {data.get(), 0}};
      const DeviceArray<char> workspace(cuda::grad_stats_workspace_bytes(table, 2));
      const DeviceArray<cuda::DeviceGradStats> out(1);
      check(cuda::grad_stats(table, 2, dtype, workspace.get(), out.get(), nullptr), "stats");
      expect_stats(out.download(1)[0], amp_grad_stats({amp_widen(k, dtype, *set)}));
    }
  }
}

TEST(GpuGradStats, NoTensorsGiveZero) {
  STRATA_REQUIRE_GPU();
  const DeviceArray<cuda::DeviceGradStats> out(1);
  check(cudaMemset(out.get(), 0xff, sizeof(cuda::DeviceGradStats)), "memset");
  check(cuda::grad_stats(nullptr, 0, STRATA_F32, nullptr, out.get(), nullptr), "stats");
  const cuda::DeviceGradStats s = out.download(1)[0];
  EXPECT_EQ(s.sum_sq, 0.0);
  EXPECT_EQ(s.nonfinite, 0);
}

// ---- optimizers ---------------------------------------------------------------------------------

struct OptimizerParam {
  OptimizerCase c;
  strata_dtype grad_dtype;
  strata_dtype model_dtype;  // STRATA_F32: no copy-out
};

void PrintTo(const OptimizerParam& p, std::ostream* os) {
  *os << p.c.name << "_grad_" << sdk::dtype_name(p.grad_dtype) << "_copy_"
      << (p.model_dtype == STRATA_F32 ? "none" : sdk::dtype_name(p.model_dtype));
}

// One tensor on the device: its arrays, and the gradient as stored in grad_dtype.
struct DeviceTensorSet {
  std::size_t offset;
  std::unique_ptr<DeviceArray<float>> param, state0, state1, grad32;
  std::unique_ptr<DeviceArray<uint16_t>> grad16, copy;
};

class GpuOptimizer : public ::testing::TestWithParam<OptimizerParam> {};

// 130 tensors (more than a table's 128) of sizes 0 to several chunks, one of them unaligned
// (element 1 of its buffers), some without a copy-out; three steps. Every array bit for bit as
// element_math.hpp computes it on the host, and within 1e-6 relative of the offload kernels.
TEST_P(GpuOptimizer, ThreeStepsMatchTheCpuKernels) {
  STRATA_REQUIRE_GPU();
  const OptimizerParam& p = GetParam();
  const bool copies = p.model_dtype != STRATA_F32;
  std::mt19937 rng(31);
  std::uniform_int_distribution<std::size_t> size(0, 2000);
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 127; ++i) sizes.push_back(size(rng));
  sizes.insert(sizes.end(), {0, 65536 + 7, 2 * 65536});
  std::vector<HostTensor> cpu, host;
  std::vector<DeviceTensorSet> dev;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    cpu.push_back(make_tensor(p.c, sizes[i], copies && i % 5 != 0, rng));
    host.push_back(cpu.back());
    DeviceTensorSet d;
    d.offset = i == 100 ? 1 : 0;
    const HostTensor& t = cpu.back();
    d.param = std::make_unique<DeviceArray<float>>(t.param, d.offset);
    if (!t.state0.empty()) d.state0 = std::make_unique<DeviceArray<float>>(t.state0, d.offset);
    if (!t.state1.empty()) d.state1 = std::make_unique<DeviceArray<float>>(t.state1, d.offset);
    if (!t.copy.empty()) d.copy = std::make_unique<DeviceArray<uint16_t>>(t.copy, d.offset);
    d.grad32 = std::make_unique<DeviceArray<float>>(sizes[i] + d.offset);
    d.grad16 = std::make_unique<DeviceArray<uint16_t>>(sizes[i] + d.offset);
    dev.push_back(std::move(d));
  }
  std::normal_distribution<float> normal(0.0f, 4.0f);
  for (int step = 1; step <= 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    std::vector<cuda::AdamTensor> adam;
    std::vector<cuda::SgdTensor> sgd;
    std::vector<cuda::LionTensor> lion;
    std::vector<std::vector<float>> widened(sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      DeviceTensorSet& d = dev[i];
      std::vector<float> g(sizes[i]);
      std::vector<uint16_t> g16(sizes[i]);
      for (std::size_t j = 0; j < g.size(); ++j) {
        g[j] = normal(rng);
        if (p.grad_dtype == STRATA_F16) g[j] = math::f16_to_f32(g16[j] = math::f32_to_f16(g[j]));
        if (p.grad_dtype == STRATA_BF16) {
          g[j] = math::bf16_to_f32(g16[j] = math::f32_to_bf16(g[j]));
        }
      }
      d.grad32->upload(g, d.offset);
      d.grad16->upload(g16, d.offset);
      widened[i] = g;
      const void* grad = p.grad_dtype == STRATA_F32
                             ? static_cast<const void*>(d.grad32->get(d.offset))
                             : static_cast<const void*>(d.grad16->get(d.offset));
      float* s0 = d.state0 ? d.state0->get(d.offset) : nullptr;
      float* s1 = d.state1 ? d.state1->get(d.offset) : nullptr;
      void* copy = d.copy ? d.copy->get(d.offset) : nullptr;
      float* x = d.param->get(d.offset);
      adam.push_back({x, grad, s0, s1, copy, sizes[i]});
      sgd.push_back({x, grad, s0, copy, sizes[i]});
      lion.push_back({x, grad, s0, copy, sizes[i]});
    }
    switch (p.c.kind) {
      case Kind::adam:
        check(cuda::adam_step(p.c.adam_scalars(step), adam.data(), adam.size(), p.grad_dtype,
                              p.model_dtype, nullptr),
              "adam_step");
        break;
      case Kind::sgd:
        check(cuda::sgd_step(p.c.sgd_scalars(step), sgd.data(), sgd.size(), p.grad_dtype,
                             p.model_dtype, nullptr),
              "sgd_step");
        break;
      case Kind::lion:
        check(cuda::lion_step(p.c.lion_scalars(step), lion.data(), lion.size(), p.grad_dtype,
                              p.model_dtype, nullptr),
              "lion_step");
        break;
    }
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      SCOPED_TRACE("tensor " + std::to_string(i) + " of " + std::to_string(sizes[i]));
      offload_step(p.c, step, cpu[i], widened[i].data(), p.model_dtype);
      element_step(p.c, step, host[i], widened[i].data(), p.model_dtype);
      const HostTensor& h = host[i];
      const DeviceTensorSet& d = dev[i];
      const std::tuple<const char*, const DeviceArray<float>*, const std::vector<float>*,
                       const std::vector<float>*>
          arrays[] = {{"param", d.param.get(), &cpu[i].param, &h.param},
                      {"state 0", d.state0.get(), &cpu[i].state0, &h.state0},
                      {"state 1", d.state1.get(), &cpu[i].state1, &h.state1}};
      for (const auto& [name, device, offload, element] : arrays) {
        if (device == nullptr) continue;
        const std::vector<float> got = device->download(sizes[i], d.offset);
        const Errors e = compare(got, *offload);
        ASSERT_TRUE(e.acceptable()) << name << " against the offload kernel: " << e;
        for (std::size_t j = 0; j < sizes[i]; ++j) {
          ASSERT_EQ(bits(got[j]), bits((*element)[j])) << name << " element " << j;
        }
      }
      if (d.copy) {
        ASSERT_EQ(d.copy->download(sizes[i], d.offset), h.copy) << "copy-out";
      }
    }
  }
}

std::vector<OptimizerParam> optimizer_params() {
  std::vector<OptimizerParam> out;
  for (const OptimizerCase& c : optimizer_cases()) {
    out.push_back({c, STRATA_F32, STRATA_F32});
    out.push_back({c, STRATA_F32, STRATA_BF16});
    out.push_back({c, STRATA_F16, STRATA_F16});
    out.push_back({c, STRATA_BF16, STRATA_BF16});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllOptimizers, GpuOptimizer, ::testing::ValuesIn(optimizer_params()),
                         [](const ::testing::TestParamInfo<OptimizerParam>& info) {
                           std::ostringstream os;
                           PrintTo(info.param, &os);
                           return os.str();
                         });

TEST(GpuOptimizerArguments, NullArraysAndBadDtypesAreRefused) {
  STRATA_REQUIRE_GPU();
  const DeviceArray<float> a(8);
  const cuda::AdamScalars s =
      cuda::make_adam_scalars({1e-3, 0.9, 0.999, 1e-8, 0.0, true, true}, 1, 1.0);
  const cuda::AdamTensor no_state{a.get(), a.get(), nullptr, a.get(), nullptr, 8};
  EXPECT_EQ(cuda::adam_step(s, &no_state, 1, STRATA_F32, STRATA_F32, nullptr),
            cudaErrorInvalidValue);
  const cuda::AdamTensor with_copy{a.get(), a.get(), a.get(), a.get(), a.get(), 8};
  EXPECT_EQ(cuda::adam_step(s, &with_copy, 1, STRATA_F32, STRATA_F32, nullptr),
            cudaErrorInvalidValue)
      << "a copy-out needs model_dtype f16 or bf16";
}

}  // namespace
}  // namespace strata::test::kernels
