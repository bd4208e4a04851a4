// bench/gpu_kernels: the SDK's fused Adam (with and without the f16 copy-out) and the
// multi-tensor overflow/norm pass, in GB/s of memory traffic, beside a device-to-device
// cudaMemcpy moving the same bytes, in the same run. Bytes are counted as the kernels move them:
// Adam reads master, grad, m, v and writes master, m, v (28 bytes per f32 element, 30 with the
// f16 copy-out); the check reads the gradients once (4 bytes). A cudaMemcpy of S bytes moves 2S
// (read and write), so the reference copies half the kernel's bytes. Each figure is the median
// of --reps timed repetitions (cudaEvent), after two untimed ones. Without a device it says why
// and prints the headline with the values `skipped`, exit 0.
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <strata_common/cuda/kernels.hpp>
#include <vector>

namespace strata::bench {
namespace {

void check(int rc, const char* what) {
  if (rc != 0) {
    std::fprintf(stderr, "gpu_kernels: %s failed: %s\n", what, cuda::error_string(rc));
    std::exit(1);
  }
}
void check(cudaError_t rc, const char* what) { check(static_cast<int>(rc), what); }

template <class T>
T* device_alloc(std::size_t n) {
  void* p = nullptr;
  check(cudaMalloc(&p, n * sizeof(T)), "cudaMalloc");
  return static_cast<T*>(p);
}

// Median milliseconds of `reps` timed calls of run() on `stream`, after two warm-up calls.
double median_ms(const std::function<void()>& run, int reps, cudaStream_t stream) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  run();
  run();
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    run();
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float t = 0;
    check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Figure {
  double kernel_gbps;
  double copy_gbps;
};

// The kernel against a cudaMemcpy moving the same number of bytes.
Figure measure(const char* name, const std::function<void()>& kernel, double bytes, void* scratch,
               int reps, cudaStream_t stream) {
  const auto half = static_cast<std::size_t>(bytes / 2);
  char* src = static_cast<char*>(scratch);
  char* dst = src + half;
  const double kernel_ms = median_ms(kernel, reps, stream);
  const double copy_ms = median_ms(
      [&] { check(cudaMemcpyAsync(dst, src, half, cudaMemcpyDeviceToDevice, stream), "memcpy"); },
      reps, stream);
  const Figure f{bytes / kernel_ms / 1e6, 2.0 * half / copy_ms / 1e6};
  std::printf("%-34s %9.3f ms %8.1f GB/s | d2d copy of the same bytes %9.3f ms %8.1f GB/s | %.3f\n",
              name, kernel_ms, f.kernel_gbps, copy_ms, f.copy_gbps, f.kernel_gbps / f.copy_gbps);
  return f;
}

int run(std::size_t elements, int tensors, int reps) {
  int count = 0;
  if (const cudaError_t rc = cudaGetDeviceCount(&count); rc != cudaSuccess || count == 0) {
    std::printf("gpu_kernels: no CUDA device: %s\n",
                rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices visible");
    std::printf("headline adam_vs_d2d=skipped check_vs_d2d=skipped\n");
    return 0;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  float* master = device_alloc<float>(elements);
  float* grad = device_alloc<float>(elements);
  float* m = device_alloc<float>(elements);
  float* v = device_alloc<float>(elements);
  uint16_t* copy = device_alloc<uint16_t>(elements);
  std::vector<float> host(elements);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& x : host) x = normal(rng);
  check(cudaMemcpy(master, host.data(), elements * sizeof(float), cudaMemcpyHostToDevice), "H2D");
  for (float& x : host) x *= 1e-2f;
  check(cudaMemcpy(grad, host.data(), elements * sizeof(float), cudaMemcpyHostToDevice), "H2D");
  check(cuda::fill_zero(m, elements * sizeof(float), stream), "fill_zero");
  check(cuda::fill_zero(v, elements * sizeof(float), stream), "fill_zero");

  // `tensors` tensors of equal size, the last one taking the remainder.
  const std::size_t each = elements / static_cast<std::size_t>(tensors);
  std::vector<cuda::AdamTensor> adam, adam_copy;
  std::vector<cuda::DeviceTensor> grads;
  for (int t = 0; t < tensors; ++t) {
    const std::size_t at = static_cast<std::size_t>(t) * each;
    const std::size_t n = t + 1 == tensors ? elements - at : each;
    adam.push_back({master + at, grad + at, m + at, v + at, nullptr, n});
    adam_copy.push_back({master + at, grad + at, m + at, v + at, copy + at, n});
    grads.push_back({grad + at, n});
  }
  const cuda::AdamScalars s =
      cuda::make_adam_scalars({1e-4, 0.9, 0.999, 1e-8, 0.01, true, true}, 10, 1.0);
  void* workspace = nullptr;
  check(cudaMalloc(&workspace, cuda::grad_stats_workspace_bytes(grads.data(), grads.size())),
        "cudaMalloc");
  cuda::DeviceGradStats* stats = device_alloc<cuda::DeviceGradStats>(1);
  // The reference copy's buffers: as many bytes as the largest kernel moves.
  const double n = static_cast<double>(elements);
  void* scratch = device_alloc<char>(static_cast<std::size_t>(30 * n) + 64);

  std::printf("gpu_kernels: %s (sm_%d%d, %d SMs), %zu elements in %d tensors, median of %d\n",
              prop.name, prop.major, prop.minor, prop.multiProcessorCount, elements, tensors, reps);
  const Figure adam_f = measure(
      "adam f32, f16 copy-out (30 B/elem)",
      [&] {
        check(cuda::adam_step(s, adam_copy.data(), adam_copy.size(), STRATA_F32, STRATA_F16,
                              stream),
              "adam_step");
      },
      30 * n, scratch, reps, stream);
  measure(
      "adam f32, no copy-out (28 B/elem)",
      [&] {
        check(cuda::adam_step(s, adam.data(), adam.size(), STRATA_F32, STRATA_F32, stream),
              "adam_step");
      },
      28 * n, scratch, reps, stream);
  const Figure check_f = measure(
      "overflow+sqnorm f32 (4 B/elem)",
      [&] {
        check(cuda::grad_stats(grads.data(), grads.size(), STRATA_F32, workspace, stats, stream),
              "grad_stats");
      },
      4 * n, scratch, reps, stream);
  cuda::DeviceGradStats result{};
  check(cudaMemcpy(&result, stats, sizeof(result), cudaMemcpyDeviceToHost), "D2H");
  std::printf("gradient sum of squares %.6e, non-finite %d\n", result.sum_sq, result.nonfinite);
  check(cudaDeviceSynchronize(), "the kernels");
  // Adam with the copy-out: the pass a mixed-precision step runs.
  std::printf("headline adam_vs_d2d=%.3f check_vs_d2d=%.3f\n",
              adam_f.kernel_gbps / adam_f.copy_gbps, check_f.kernel_gbps / check_f.copy_gbps);
  return 0;
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  CLI::App app{"Fused Adam and the overflow/norm pass against a device-to-device copy"};
  std::size_t elements = std::size_t{1} << 26;
  int tensors = 64;
  int reps = 20;
  app.add_option("--elements", elements, "parameters in all (f32)")->check(CLI::PositiveNumber);
  app.add_option("--tensors", tensors, "tensors they are split into")->check(CLI::Range(1, 100000));
  app.add_option("--reps", reps, "timed repetitions (the median is reported)")
      ->check(CLI::Range(1, 10000));
  CLI11_PARSE(app, argc, argv);
  return strata::bench::run(elements, tensors, reps);
}
