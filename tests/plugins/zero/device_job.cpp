// A small training job whose parameters live either in host memory or in CUDA device memory
// (ABI/API 1.7), for comparing the two: the same manifest, the same gradients, and at the end
// every parameter's value written to a file. The gradient of 0.5·c·(w − t)² with a fixed target t
// is computed on the CPU (device parameters are copied down for it and the gradient copied up),
// so both jobs feed the strata bit-identical inputs; what differs is only where zero, amp and
// offload keep and move their buffers.
//
//   device_job --manifest M [--overrides JSON] --memory host|cuda --out FILE [--steps N]
//   device_job --compare A B --rtol R       (exit 1 naming the first element off by more)
//
// Exits 0 with "SKIP no CUDA device: ..." on stdout (ctest's skip expression) when --memory cuda
// finds no device.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <strata/half.hpp>
#include <strata/strata.hpp>
#include <vector>

namespace {

using strata::GatheredGroup;
using strata::Runtime;

void cuda_check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(rc));
}

struct Tensor {
  std::string name;
  uint64_t count = 0;
  uint32_t index = 0;
  uint32_t group = 0;
  std::vector<float> target;
  void* device_data = nullptr;  // --memory cuda: the registered buffer
  std::vector<unsigned char> host_data;
};

float to_float(const unsigned char* p, strata_dtype dtype, uint64_t i) {
  if (dtype == STRATA_F32) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return dtype == STRATA_F16 ? strata::f16_to_float(h) : strata::bf16_to_float(h);
}

void from_float(unsigned char* p, strata_dtype dtype, uint64_t i, float f) {
  if (dtype == STRATA_F32) {
    std::memcpy(p + 4 * i, &f, 4);
    return;
  }
  const uint16_t h =
      dtype == STRATA_F16 ? strata::float_to_f16(f) : strata::float_to_bf16(f);
  std::memcpy(p + 2 * i, &h, 2);
}

// Reads `bytes` at `src` (device or host memory) into a host vector.
std::vector<unsigned char> read_bytes(const void* src, size_t bytes, bool device) {
  std::vector<unsigned char> out(bytes);
  if (device) {
    cuda_check(cudaMemcpy(out.data(), src, bytes, cudaMemcpyDeviceToHost), "copy to the host");
  } else {
    std::memcpy(out.data(), src, bytes);
  }
  return out;
}

void write_bytes(void* dst, const std::vector<unsigned char>& src, bool device) {
  if (device) {
    cuda_check(cudaMemcpy(dst, src.data(), src.size(), cudaMemcpyHostToDevice), "copy to the device");
  } else {
    std::memcpy(dst, src.data(), src.size());
  }
}

int train(const std::string& manifest, const std::string& overrides, bool on_device,
          const std::string& out_path, int steps) {
  if (on_device) {
    int count = 0;
    const cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0) {
      std::printf("SKIP no CUDA device: %s\n",
                  rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices visible");
      return 0;
    }
    cuda_check(cudaSetDevice(0), "cudaSetDevice");
  }
  Runtime runtime(manifest, overrides);
  const auto dtype = static_cast<strata_dtype>(runtime.training().model_dtype);
  const size_t esize = dtype == STRATA_F32 ? 4 : 2;
  // Sizes that leave partial buckets, a bucket of one large parameter and an odd tail.
  std::vector<Tensor> tensors(4);
  const std::pair<const char*, uint64_t> shapes[] = {{"w1", 3000}, {"b1", 17}, {"w2", 1500}, {"b2", 5}};
  for (size_t t = 0; t < tensors.size(); ++t) {
    tensors[t].name = shapes[t].first;
    tensors[t].count = shapes[t].second;
  }
  for (size_t t = 0; t < tensors.size(); ++t) {
    Tensor& x = tensors[t];
    x.target.resize(x.count);
    std::vector<unsigned char> init(x.count * esize);
    for (uint64_t i = 0; i < x.count; ++i) {
      x.target[i] = 0.5f * std::sin(0.37f * float(i) + float(t));
      from_float(init.data(), dtype, i, 0.25f * std::cos(0.11f * float(i) + 2.0f * float(t)));
    }
    void* data = nullptr;
    if (on_device) {
      cuda_check(cudaMalloc(&x.device_data, init.size()), "cudaMalloc");
      write_bytes(x.device_data, init, true);
      data = x.device_data;
    } else {
      x.host_data = init;
      data = x.host_data.data();
    }
    const strata_device where =
        on_device ? strata_device{STRATA_DEVICE_CUDA, 0} : strata_device{STRATA_DEVICE_HOST, 0};
    x.index = runtime.register_param(x.name, dtype, data, nullptr, x.count, where);
  }
  // One group per pair (a "layer"): stage 3 partitions them; stages 0-2 gather nothing.
  tensors[0].group = tensors[1].group = runtime.define_group("layer1", {tensors[0].index, tensors[1].index});
  tensors[2].group = tensors[3].group = runtime.define_group("layer2", {tensors[2].index, tensors[3].index});
  runtime.finalize();

  const auto each_gathered = [&](uint32_t flags, auto&& fn) {
    for (uint32_t g : {tensors[2].group, tensors[0].group}) {
      GatheredGroup gathered(runtime, g, flags);
      for (Tensor& x : tensors) {
        if (x.group == g) fn(x, runtime.view(x.index));
      }
      gathered.release();
    }
  };
  for (int step = 1; step <= steps; ++step) {
    const double scale = runtime.loss_scale();
    each_gathered(STRATA_GATHER_FOR_BACKWARD, [&](Tensor& x, const strata_param_view& view) {
      if (view.data == nullptr || view.grad == nullptr) {
        throw std::runtime_error("no data or gradient in the view of " + x.name);
      }
      const std::vector<unsigned char> w = read_bytes(view.data, x.count * esize, on_device);
      std::vector<unsigned char> g = read_bytes(view.grad, x.count * esize, on_device);
      for (uint64_t i = 0; i < x.count; ++i) {
        const float grad = 0.5f * (to_float(w.data(), dtype, i) - x.target[i]) +
                           0.01f * std::sin(float(step) * 0.7f + float(i));
        from_float(g.data(), dtype, i, to_float(g.data(), dtype, i) + float(scale) * grad);
      }
      write_bytes(view.grad, g, on_device);
      runtime.grad_ready(x.index);
    });
    const strata::StepResult r = runtime.step();
    if (r.outcome != STRATA_STEP_APPLIED) {
      throw std::runtime_error("step " + std::to_string(step) + " was not applied (outcome " +
                               std::to_string(int(r.outcome)) + ")");
    }
  }
  std::vector<float> values;
  each_gathered(0, [&](Tensor& x, const strata_param_view& view) {
    const std::vector<unsigned char> w = read_bytes(view.data, x.count * esize, on_device);
    for (uint64_t i = 0; i < x.count; ++i) values.push_back(to_float(w.data(), dtype, i));
  });
  if (runtime.world().rank == 0) {
    std::ofstream out(out_path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(values.data()),
              static_cast<std::streamsize>(values.size() * sizeof(float)));
    if (!out) throw std::runtime_error("cannot write " + out_path);
  }
  std::printf("%s memory, %s model: %d steps, %zu values written to %s\n",
              on_device ? "CUDA" : "host", strata_dtype_name(dtype), steps, values.size(),
              out_path.c_str());
  for (Tensor& x : tensors) {
    if (x.device_data != nullptr) cudaFree(x.device_data);
  }
  return 0;
}

std::vector<float> read_values(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<float> v(static_cast<size_t>(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

int compare(const std::string& a_path, const std::string& b_path, double rtol) {
  const std::vector<float> a = read_values(a_path), b = read_values(b_path);
  if (a.size() != b.size() || a.empty()) {
    std::printf("FAIL %s has %zu values, %s has %zu\n", a_path.c_str(), a.size(), b_path.c_str(),
                b.size());
    return 1;
  }
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(std::fabs(double(a[i])), std::fabs(double(b[i])));
    const double rel = std::fabs(double(a[i]) - double(b[i])) / std::max(scale, 1e-3);
    if (!(rel <= rtol)) {
      std::printf("FAIL value %zu: %.9g vs %.9g (relative %.3g > %.3g)\n", i, a[i], b[i], rel, rtol);
      return 1;
    }
    worst = std::max(worst, rel);
  }
  std::printf("OK %zu values agree, worst relative difference %.3g (limit %.3g)\n", a.size(), worst,
              rtol);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string manifest, overrides, memory = "host", out = "values.bin";
    int steps = 8;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + ": missing value");
        return argv[++i];
      };
      if (a == "--compare") {
        const std::string x = next(), y = next();
        if (i + 2 < argc && std::string(argv[i + 1]) == "--rtol") {
          ++i;
          return compare(x, y, std::stod(next()));
        }
        throw std::invalid_argument("--compare A B --rtol R");
      }
      if (a == "--manifest") manifest = next();
      else if (a == "--overrides") overrides = next();
      else if (a == "--memory") memory = next();
      else if (a == "--out") out = next();
      else if (a == "--steps") steps = std::stoi(next());
      else throw std::invalid_argument("unknown argument " + a);
    }
    if (memory != "host" && memory != "cuda") {
      throw std::invalid_argument("--memory: expected host or cuda, got " + memory);
    }
    return train(manifest, overrides, memory == "cuda", out, steps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "device_job: %s\n", e.what());
    return 1;
  }
}
