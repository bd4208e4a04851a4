// Gradient fusion benchmark: one training step's gradient averaging for a model of many small and
// a few large tensors, (a) through strata_zero's fusion buckets and (b) as one blocking allreduce
// per tensor through the comm plugin. Run under mpirun (see run.sh); rank 0 prints the table.
#include "plugin_harness.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using strata::test::FakeHost;
using strata::test::PluginLibrary;

void check(strata_status status, const strata_error& err, const char* what) {
  if (status != STRATA_OK) throw std::runtime_error(std::string(what) + ": " + err.message);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The comm plugin instance both variants share; collectives through the SDK's Comm (which throws
// strata::sdk::Error, naming the collective, on failure).
class Comm {
 public:
  Comm(const PluginLibrary& lib, FakeHost& host) {
    const auto& ops = lib.ops<strata_comm_ops>();
    void* self = nullptr;
    strata_error err = strata::sdk::make_error();
    check(lib.create<strata_comm_ops>("{}", host.api(), &self, &err), err, "comm create");
    comm_ = strata::sdk::Comm(&ops, self);
    caps_ = comm_.query();
  }
  ~Comm() { comm_.ops()->destroy(comm_.self()); }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  const strata::sdk::Comm& stratum() const { return comm_; }
  const strata_comm_ops& ops() const { return *comm_.ops(); }
  void* self() const { return comm_.self(); }
  int rank() const { return caps_.rank; }
  int size() const { return caps_.size; }

  void barrier() { comm_.barrier(); }
  // A step takes as long as its slowest rank.
  double max_over_ranks(double value) {
    const strata_buffer b = strata::sdk::host_buffer(&value, 1, STRATA_F64);
    comm_.allreduce(b, b, STRATA_MAX);
    return value;
  }
  void average(float* data, uint64_t count) {
    const strata_buffer b = strata::sdk::host_buffer(data, count, STRATA_F32);
    comm_.allreduce(b, b, STRATA_AVG);
  }

 private:
  strata::sdk::Comm comm_;
  strata_comm_caps caps_{};
};

// Layers in registration order: `small` tensors with a large one after every small/large of them.
struct Model {
  Model(int small, uint64_t small_count, int large, uint64_t large_count) {
    const int per_group = large > 0 ? small / large : small;
    for (int s = 0, l = 0; s < small || l < large;) {
      for (int k = 0; k < per_group && s < small; ++k, ++s) add(small_count);
      if (l < large) {
        add(large_count);
        ++l;
      }
      if (large == 0) break;
    }
  }
  void add(uint64_t count) {
    data.emplace_back(count, 1.0f);
    grads.emplace_back(count, 0.0f);
  }
  void fill(int rank) {
    for (auto& g : grads) {
      for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(rank + static_cast<int>(i % 7));
    }
  }
  uint64_t elements() const {
    uint64_t n = 0;
    for (const auto& g : grads) n += g.size();
    return n;
  }
  std::vector<std::vector<float>> data, grads;
};

struct Options {
  int iterations = 20;
  int warmup = 3;
  int small = 200;
  int large = 4;
  uint64_t small_count = 1024;       // 4 KiB of f32
  uint64_t large_count = 1u << 20;   // 4 MiB of f32
  std::vector<uint64_t> extra_buckets;
  std::string comm_path, zero_path;
};

template <class Step>
double median_step_ms(Comm& comm, Model& model, const Options& o, Step&& step) {
  std::vector<double> times;
  for (int it = 0; it < o.warmup + o.iterations; ++it) {
    model.fill(comm.rank());
    comm.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    step();
    const double t = comm.max_over_ranks(seconds_since(t0));
    if (it >= o.warmup) times.push_back(t * 1e3);
  }
  return median(times);
}

double per_tensor_ms(Comm& comm, Model& model, const Options& o) {
  return median_step_ms(comm, model, o, [&] {
    for (size_t p = model.grads.size(); p-- > 0;) {
      comm.average(model.grads[p].data(), model.grads[p].size());
    }
  });
}

// The same collectives as the reference, but non-blocking (all started, then all waited): the
// mechanism strata_zero's buckets use, so its cost shows apart from the fusion itself.
double per_tensor_nonblocking_ms(Comm& comm, Model& model, const Options& o) {
  std::vector<strata_request> requests(model.grads.size());
  const strata::sdk::Comm& stratum = comm.stratum();
  return median_step_ms(comm, model, o, [&] {
    for (size_t p = model.grads.size(); p-- > 0;) {
      const strata_buffer b =
          strata::sdk::host_buffer(model.grads[p].data(), model.grads[p].size(), STRATA_F32);
      stratum.allreduce(b, b, STRATA_AVG, &requests[p]);
    }
    for (size_t p = model.grads.size(); p-- > 0;) stratum.wait(requests[p]);
  });
}

double fused_ms(Comm& comm, FakeHost& host, const PluginLibrary& lib, Model& model,
                const std::string& config, const Options& o) {
  const auto& zero = lib.ops<strata_sharding_ops>();
  strata_error err = strata::sdk::make_error();
  void* self = nullptr;
  check(lib.create<strata_sharding_ops>(config.c_str(), host.api(), &self, &err), err,
        "zero create");
  for (size_t p = 0; p < model.grads.size(); ++p) {
    const std::string name = "param" + std::to_string(p);
    strata_param_desc d{};
    d.struct_size = sizeof(d);
    d.name = name.c_str();
    d.dtype = STRATA_F32;
    d.device = strata_device{STRATA_DEVICE_HOST, 0};
    d.count = model.grads[p].size();
    d.data = model.data[p].data();
    d.grad = model.grads[p].data();
    check(zero.register_param(self, static_cast<uint32_t>(p), &d, &err), err, "register_param");
  }
  check(zero.finalize(self, &err), err, "finalize");
  const double ms = median_step_ms(comm, model, o, [&] {
    for (size_t p = model.grads.size(); p-- > 0;) {
      strata_grad_ready_args ready{};
      ready.struct_size = sizeof(ready);
      ready.param_index = static_cast<uint32_t>(p);
      ready.boundary = 1;
      check(zero.grad_ready(self, &ready, &err), err, "grad_ready");
    }
    check(zero.finish_reduce(self, &err), err, "finish_reduce");
  });
  zero.destroy(self);
  return ms;
}

// One collective's latency, to explain the per-tensor figure.
double single_allreduce_us(Comm& comm, uint64_t count, const Options& o) {
  Model one(1, count, 0, 0);
  Options more = o;
  more.iterations = o.iterations * 5;
  return 1e3 * median_step_ms(comm, one, more, [&] { comm.average(one.grads[0].data(), count); });
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"strata_zero gradient fusion vs one allreduce per tensor"};
  app.add_option("--comm-plugin", o.comm_path, "path of libstrata_allreduce_mpi.so")->required();
  app.add_option("--zero-plugin", o.zero_path, "path of libstrata_zero.so")->required();
  app.add_option("--iterations", o.iterations, "measured steps")->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "unmeasured steps first")->check(CLI::NonNegativeNumber);
  app.add_option("--small", o.small, "number of 4 KiB gradients")->check(CLI::NonNegativeNumber);
  app.add_option("--large", o.large, "number of 4 MiB gradients")->check(CLI::NonNegativeNumber);
  app.add_option("--extra-buckets", o.extra_buckets,
                 "also time these reduce_bucket_size values (elements)")->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  try {
    PluginLibrary comm_lib(o.comm_path), zero_lib(o.zero_path);
    FakeHost comm_host, zero_host;
    Comm comm(comm_lib, comm_host);
    zero_host.set_comm(&comm.ops(), comm.self());
    const bool root = comm.rank() == 0;
    Model model(o.small, o.small_count, o.large, o.large_count);

    const double baseline = per_tensor_ms(comm, model, o);
    const double nonblocking = per_tensor_nonblocking_ms(comm, model, o);
    const double fused = fused_ms(comm, zero_host, zero_lib, model, "{}", o);
    std::vector<std::pair<uint64_t, double>> extra;
    for (uint64_t b : o.extra_buckets) {
      extra.emplace_back(b, fused_ms(comm, zero_host, zero_lib, model,
                                     "{\"reduce_bucket_size\": " + std::to_string(b) + "}", o));
    }
    // The same step without the large tensors: what fusion saves when latency dominates.
    Model small_only(o.small, o.small_count, 0, 0);
    const double small_baseline = per_tensor_ms(comm, small_only, o);
    const double small_fused = fused_ms(comm, zero_host, zero_lib, small_only, "{}", o);
    const double small_us = single_allreduce_us(comm, o.small_count, o);
    const double large_us = single_allreduce_us(comm, o.large_count, o);

    if (root) {
      std::printf("gradient fusion: %d x %llu + %d x %llu f32 (%.1f MiB), %d ranks, median of %d "
                  "steps after %d warm-up\n",
                  o.small, static_cast<unsigned long long>(o.small_count), o.large,
                  static_cast<unsigned long long>(o.large_count),
                  static_cast<double>(model.elements()) * 4 / (1 << 20), comm.size(),
                  o.iterations, o.warmup);
      std::printf("%-44s %10s %8s\n", "variant", "step_ms", "speedup");
      std::printf("%-44s %10.3f %8.2f\n", "one blocking allreduce per tensor (reference)",
                  baseline, 1.0);
      std::printf("%-44s %10.3f %8.2f\n", "one non-blocking allreduce per tensor", nonblocking,
                  baseline / nonblocking);
      std::printf("%-44s %10.3f %8.2f\n", "strata_zero, default reduce_bucket_size", fused,
                  baseline / fused);
      for (const auto& [bucket, ms] : extra) {
        const std::string label = "strata_zero, reduce_bucket_size " + std::to_string(bucket);
        std::printf("%-44s %10.3f %8.2f\n", label.c_str(), ms, baseline / ms);
      }
      std::printf("%-44s %10.3f %8.2f\n", "small tensors only: one allreduce per tensor",
                  small_baseline, 1.0);
      std::printf("%-44s %10.3f %8.2f\n", "small tensors only: strata_zero default",
                  small_fused, small_baseline / small_fused);
      std::printf("single allreduce: %llu elements %.1f us, %llu elements %.1f us\n",
                  static_cast<unsigned long long>(o.small_count), small_us,
                  static_cast<unsigned long long>(o.large_count), large_us);
      std::printf("headline fused_speedup=%.2f ranks=%d fused_ms=%.3f per_tensor_ms=%.3f\n",
                  baseline / fused, comm.size(), fused, baseline);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fusion_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
