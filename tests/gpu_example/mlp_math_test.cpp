// The GPU host's per-element math (examples/fashion_mnist/cuda/mlp_math.hpp, the functions its
// kernels call), its GEMM shapes (gemm_shapes.hpp, the cuBLAS calls' transposes) and its device
// choice, checked on the CPU against the CPU host's code: mlp.cpp's softmax_cross_entropy and
// loops, runtime_layers.cpp's half accumulation (done by the shared CUDA kernels on the GPU), CBLAS.
// Runs without a GPU; what it cannot check is the launch itself (the gpu-labelled test does).
#include <cblas.h>
#include <gtest/gtest.h>
#include <strata_common/element_math.hpp>
#include <strata/half.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "device_choice.hpp"
#include "gemm_shapes.hpp"
#include "mlp.hpp"
#include "mlp_math.hpp"

namespace fm = strata::fmnist;
namespace math = strata::fmnist::math;

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

std::vector<float> random_floats(std::size_t n, float scale, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = scale * (static_cast<float>(rng() >> 40) * 0x1.0p-24f * 2.0f - 1.0f);
  return v;
}

}  // namespace

// A half model's gradient on the GPU: GpuRuntimeLayers widens with the SDK's cast and adds the f32
// gradient with the SDK's accumulate; their element math must be RuntimeLayers::add_grad_into's,
// half = to_half(to_float(half) + f32 gradient), on every half value (signalling nans aside: the
// SDK's widening quiets them, half.hpp's keeps them).
TEST(GpuMlpMath, SdkHalfAccumulationIsRuntimeLayers) {
  namespace sdk = strata::cuda::math;
  const auto adds = random_floats(4096, 0.01f, 7);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float add = adds[h % adds.size()];
    const bool f16_nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
    const bool bf16_nan = (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0;
    if (!f16_nan) {
      ASSERT_EQ(bits(sdk::F16::load(uint16_t(h))), bits(strata::f16_to_float(uint16_t(h))));
      ASSERT_EQ(sdk::F16::store(sdk::accumulated(sdk::F16::load(uint16_t(h)), add)),
                strata::float_to_f16(strata::f16_to_float(uint16_t(h)) + add))
          << "f16 0x" << std::hex << h;
    }
    if (!bf16_nan) {
      ASSERT_EQ(bits(sdk::BF16::load(uint16_t(h))), bits(strata::bf16_to_float(uint16_t(h))));
      ASSERT_EQ(sdk::BF16::store(sdk::accumulated(sdk::BF16::load(uint16_t(h)), add)),
                strata::float_to_bf16(strata::bf16_to_float(uint16_t(h)) + add))
          << "bf16 0x" << std::hex << h;
    }
  }
}

TEST(GpuMlpMath, ReluIsStdMaxAndItsBackwardTheCpuMask) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values = random_floats(1000, 3.0f, 11);
  values.insert(values.end(), {0.0f, -0.0f, nan, -nan, inf, -inf, 1e-45f, -1e-45f});
  for (const float v : values) {
    EXPECT_EQ(bits(math::relu(v)), bits(std::max(v, 0.0f))) << v;
    // mlp.cpp: `if (act[k] <= 0.0f) delta_prev_[k] = 0.0f;`
    float cpu = 2.5f;
    if (v <= 0.0f) cpu = 0.0f;
    EXPECT_EQ(bits(math::relu_backward(2.5f, v)), bits(cpu)) << v;
  }
}

TEST(GpuMlpMath, ArgmaxIsMaxElementTiesIncluded) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 2000; ++trial) {
    float row[10];
    for (float& x : row) x = float(rng() % 4);  // many ties
    const auto cpu = std::max_element(row, row + 10) - row;
    ASSERT_EQ(math::argmax_row(row, 10), cpu);
  }
}

// The softmax rows against mlp.cpp's softmax_cross_entropy: same loss (summed row by row in
// double, then divided, as GpuMlp::train does on the host) and the same gradient, bit for bit.
TEST(GpuMlpMath, SoftmaxCrossEntropyIsTheCpuHosts) {
  const std::size_t n = 64, classes = 10;
  for (const float spread : {0.5f, 8.0f, 80.0f}) {
    const auto logits = random_floats(n * classes, spread, 5);
    std::vector<uint8_t> labels(n);
    for (std::size_t i = 0; i < n; ++i) labels[i] = uint8_t((i * 7) % classes);
    const float scale = 3.0f / float(n);
    std::vector<float> cpu_grad(n * classes), gpu_grad(n * classes);
    const double cpu_loss =
        fm::softmax_cross_entropy(logits.data(), labels.data(), n, classes, scale, cpu_grad.data());
    double total = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      total += math::softmax_xent_row(logits.data() + i * classes, int(classes), labels[i], scale,
                                      gpu_grad.data() + i * classes);
    }
    EXPECT_EQ(total / double(n), cpu_loss) << "spread " << spread;
    for (std::size_t k = 0; k < n * classes; ++k) {
      ASSERT_EQ(bits(gpu_grad[k]), bits(cpu_grad[k])) << "element " << k << " spread " << spread;
    }
  }
}

// mlp.cpp's bias gradient loop: rows added one after the other into the accumulated gradient.
TEST(GpuMlpMath, BiasGradientIsTheCpuLoop) {
  const std::size_t n = 33, out = 17;
  const auto delta = random_floats(n * out, 1.0f, 9);
  std::vector<float> cpu = random_floats(out, 0.1f, 10), gpu = cpu;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < out; ++j) cpu[j] += delta[i * out + j];
  }
  for (std::size_t j = 0; j < out; ++j) gpu[j] = math::bias_grad_column(gpu[j], delta.data(), n, out, j);
  for (std::size_t j = 0; j < out; ++j) EXPECT_EQ(bits(gpu[j]), bits(cpu[j])) << j;
}

namespace {

// What cublasSgemm computes (alpha 1), by definition, on the CPU.
void column_major_reference(const fm::cuda::ColumnMajorGemm& g) {
  auto at = [](const float* m, int ld, fm::cuda::Op op, int r, int c) {
    return op == fm::cuda::Op::none ? m[r + c * ld] : m[c + r * ld];
  };
  for (int j = 0; j < g.n; ++j) {
    for (int i = 0; i < g.m; ++i) {
      double sum = 0.0;
      for (int p = 0; p < g.k; ++p) sum += double(at(g.a, g.lda, g.op_a, i, p)) * at(g.b, g.ldb, g.op_b, p, j);
      float& c = g.c[i + j * g.ldc];
      c = float(double(g.beta) * c + sum);
    }
  }
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    ASSERT_NEAR(got[k], want[k], 1e-4f * (1.0f + std::fabs(want[k]))) << what << " element " << k;
  }
}

}  // namespace

// The three products of a layer (mlp.cpp's cblas_sgemm calls, row-major) against the column-major
// shapes GpuMlp hands cuBLAS, on a layer whose dimensions all differ (a swapped pair would show).
TEST(GpuMlpGemmShapes, MatchTheCpuHostsRowMajorProducts) {
  const std::size_t n = 5, in = 7, out = 3;
  const auto x = random_floats(n * in, 1.0f, 1), w = random_floats(in * out, 1.0f, 2);
  const auto delta = random_floats(n * out, 1.0f, 3);
  const int N = int(n), I = int(in), O = int(out);

  std::vector<float> z_cpu = random_floats(n * out, 1.0f, 4), z_gpu = z_cpu;  // beta 1: bias in z
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, O, I, 1.0f, x.data(), I, w.data(), O,
              1.0f, z_cpu.data(), O);
  column_major_reference(fm::cuda::forward_gemm(x.data(), w.data(), z_gpu.data(), n, in, out));
  expect_close(z_gpu, z_cpu, "forward");

  std::vector<float> dw_cpu = random_floats(in * out, 1.0f, 5), dw_gpu = dw_cpu;  // accumulated
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, I, O, N, 1.0f, x.data(), I, delta.data(), O,
              1.0f, dw_cpu.data(), O);
  column_major_reference(fm::cuda::weight_grad_gemm(x.data(), delta.data(), dw_gpu.data(), n, in, out));
  expect_close(dw_gpu, dw_cpu, "weight gradient");

  std::vector<float> dp_cpu(n * in, 9.0f), dp_gpu(n * in, -9.0f);  // beta 0: old values ignored
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, I, O, 1.0f, delta.data(), O, w.data(), O,
              0.0f, dp_cpu.data(), I);
  column_major_reference(fm::cuda::input_grad_gemm(delta.data(), w.data(), dp_gpu.data(), n, in, out));
  expect_close(dp_gpu, dp_cpu, "input gradient");
}

TEST(GpuDeviceChoice, OneDevicePerLocalRankUnlessSharing) {
  EXPECT_EQ(fm::choose_device({0, 1, 1, false}), 0);
  EXPECT_EQ(fm::choose_device({3, 4, 8, false}), 3);
  EXPECT_EQ(fm::choose_device({1, 2, 1, true}), 0);
  EXPECT_EQ(fm::choose_device({5, 8, 3, true}), 2);
}

TEST(GpuDeviceChoice, RefusesNamingTheRankAndCounts) {
  auto message = [](fm::DeviceChoiceInput in) {
    try {
      fm::choose_device(in);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string none = message({0, 1, 0, false});
  EXPECT_NE(none.find("no visible CUDA device for local rank 0 of 1"), std::string::npos) << none;
  const std::string more = message({1, 2, 1, false});
  EXPECT_NE(more.find("2 ranks on this node but 1 visible CUDA device(s)"), std::string::npos) << more;
  EXPECT_NE(more.find("--share-device"), std::string::npos) << more;
  const std::string shared_none = message({0, 2, 0, true});  // sharing needs one device at least
  EXPECT_NE(shared_none.find("no visible CUDA device"), std::string::npos) << shared_none;
  const std::string bad = message({2, 2, 4, false});
  EXPECT_NE(bad.find("not a valid local rank"), std::string::npos) << bad;
}
