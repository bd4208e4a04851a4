// bench/cpu_adam: the offload plugin's CPU optimizer kernels (all cores, run-time chosen SIMD)
// beside (a) a streaming kernel with the same memory traffic and trivial arithmetic, on the same
// threads and tiles — the bandwidth limit — and (b) a plain scalar single-thread loop, all in
// this run. Figures are parameters updated per second, the best of a few repetitions. Run with
// run.sh.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <strata/cpu_threads.hpp>
#include <strata_common/cpu_isa.hpp>
#include <vector>

#include "bench_loops.hpp"
#include "thread_pool.hpp"
#include "tiled_step.hpp"

namespace strata::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Optimizer {
  std::string name;
  int state_arrays;  // read-write arrays besides the parameters
};

// Four arrays of the largest size, reused by every optimizer and size (only the prefix is used).
struct Arrays {
  explicit Arrays(std::size_t n) : p(n, 0.5f), g(n), m(n, 0.0f), v(n, 0.0f) {
    for (std::size_t i = 0; i < n; ++i)
      g[i] = static_cast<float>(static_cast<int>(i % 17) - 8) * 1e-3f;
  }
  std::vector<float> p, g, m, v;
};

// The fastest time in seconds of each run over `reps` rounds, after one warm-up round. A round
// times every run once, in turn, so that a change in the machine's load hits them all alike.
std::vector<double> best_seconds(const std::vector<std::function<void()>>& runs, int reps) {
  for (const auto& run : runs) run();
  std::vector<double> best(runs.size(), 1e30);
  for (int r = 0; r < reps; ++r) {
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const auto start = Clock::now();
      runs[i]();
      best[i] = std::min(best[i], std::chrono::duration<double>(Clock::now() - start).count());
    }
  }
  return best;
}

std::function<void()> kernel_run(const Optimizer& opt, Arrays& a, std::size_t n,
                                 offload::ThreadPool& pool, const offload::OptimizerKernels& k,
                                 std::size_t tile) {
  if (opt.name == "adam" || opt.name == "adamw") {
    offload::AdamScalars s{
        1.0f, 0.0f, opt.name == "adamw" ? 1e-5f : 0.0f, 0.9f, 0.1f, 0.999f, 0.001f, 1e-3f,
        1.0f, 1e-8f};
    const offload::AdamArrays arrays{a.p.data(), a.g.data(), a.m.data(), a.v.data(), n, {}};
    return [&pool, &k, s, arrays, tile] { offload::adam_step(pool, k, s, {&arrays, 1}, tile); };
  }
  if (opt.name == "sgd") {
    const offload::SgdScalars s{1e-3f, 1.0f, 0.0f, 0.9f, 1.0f, 0.9f, false};
    const offload::SgdArrays arrays{a.p.data(), a.g.data(), a.m.data(), n, {}};
    return [&pool, &k, s, arrays, tile] { offload::sgd_step(pool, k, s, {&arrays, 1}, tile); };
  }
  const offload::LionScalars s{1.0f, 1e-4f, 0.0f, 0.9f, 0.1f, 0.99f, 0.01f};
  const offload::LionArrays arrays{a.p.data(), a.g.data(), a.m.data(), n, {}};
  return [&pool, &k, s, arrays, tile] { offload::lion_step(pool, k, s, {&arrays, 1}, tile); };
}

std::function<void()> stream_run(const Optimizer& opt, Arrays& a, std::size_t n,
                                 offload::ThreadPool& pool, common::cpu::Isa isa,
                                 std::size_t tile) {
  std::vector<float*> rw = {a.p.data(), a.m.data(), a.v.data()};
  rw.resize(1 + static_cast<std::size_t>(opt.state_arrays));
  return [&pool, rw, n, g = a.g.data(), tile, stream = stream_range_for(isa)] {
    pool.run((n + tile - 1) / tile, [&](std::size_t t) {
      stream(rw.data(), rw.size(), g, t * tile, std::min(n, (t + 1) * tile));
    });
  };
}

std::function<void()> scalar_run(const Optimizer& opt, Arrays& a, std::size_t n) {
  if (opt.name == "adam" || opt.name == "adamw") {
    offload::AdamScalars s{
        1.0f, 0.0f, opt.name == "adamw" ? 1e-5f : 0.0f, 0.9f, 0.1f, 0.999f, 0.001f, 1e-3f,
        1.0f, 1e-8f};
    return [s, &a, n] { scalar_adam(s, a.p.data(), a.g.data(), a.m.data(), a.v.data(), n); };
  }
  if (opt.name == "sgd") {
    const offload::SgdScalars s{1e-3f, 1.0f, 0.0f, 0.9f, 1.0f, 0.9f, false};
    return [s, &a, n] { scalar_sgd(s, a.p.data(), a.g.data(), a.m.data(), n); };
  }
  const offload::LionScalars s{1.0f, 1e-4f, 0.0f, 0.9f, 0.1f, 0.99f, 0.01f};
  return [s, &a, n] { scalar_lion(s, a.p.data(), a.g.data(), a.m.data(), n); };
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using namespace strata;
  CLI::App app{"CPU optimizer kernels against a streaming kernel and a scalar loop"};
  int min_log2 = 24, max_log2 = 27, reps = 3;
  std::size_t tile = offload::kTileElements;
  app.add_option("--min-log2", min_log2, "smallest size, log2 of the parameter count")
      ->check(CLI::Range(10, 30));
  app.add_option("--max-log2", max_log2, "largest size, log2 of the parameter count")
      ->check(CLI::Range(10, 30));
  app.add_option("--reps", reps, "timed repetitions per figure (the best is kept)")
      ->check(CLI::Range(1, 100));
  app.add_option("--tile", tile, "elements per task")->check(CLI::Range(1024, 1 << 24));
  CLI11_PARSE(app, argc, argv);
  if (min_log2 > max_log2) {
    std::fprintf(stderr, "--min-log2 %d is above --max-log2 %d\n", min_log2, max_log2);
    return 2;
  }
  try {
    const common::cpu::IsaChoice isa = common::cpu::choose_isa(nullptr);
    const offload::OptimizerKernels& kernels = offload::kernels_for(isa.isa);
    offload::ThreadPool pool(sdk::cpu_threads(nullptr).count);
    std::printf("isa %s, %u threads, tile %zu elements, best of %d\n", isa.describe().c_str(),
                pool.threads(), tile, reps);
    std::printf("%-6s %10s %13s %13s %13s %9s %9s %10s\n", "optim", "params", "kernel_Gp/s",
                "stream_Gp/s", "scalar_Gp/s", "vs_stream", "vs_scalar", "stream_GB/s");
    bench::Arrays arrays(std::size_t{1} << max_log2);
    const std::vector<bench::Optimizer> optimizers = {
        {"adam", 2}, {"adamw", 2}, {"sgd", 1}, {"lion", 1}};
    double head_stream = 0, head_scalar = 0;
    for (int lg = min_log2; lg <= max_log2; ++lg) {
      const std::size_t n = std::size_t{1} << lg;
      for (const bench::Optimizer& opt : optimizers) {
        const std::vector<double> t = bench::best_seconds(
            {bench::kernel_run(opt, arrays, n, pool, kernels, tile),
             bench::stream_run(opt, arrays, n, pool, isa.isa, tile),
             bench::scalar_run(opt, arrays, n)},
            reps);
        const double kernel = t[0], stream = t[1], scalar = t[2];
        // Traffic per element: grad read, params and state read and written.
        const double bytes = 4.0 * (1 + 2 * (1 + opt.state_arrays));
        std::printf("%-6s %10zu %13.3f %13.3f %13.3f %9.3f %9.2f %10.2f\n", opt.name.c_str(), n,
                    n / kernel * 1e-9, n / stream * 1e-9, n / scalar * 1e-9, stream / kernel,
                    scalar / kernel, n * bytes / stream * 1e-9);
        if (lg == max_log2 && opt.name == "adam")
          head_stream = stream / kernel, head_scalar = scalar / kernel;
      }
    }
    std::printf("headline adam_vs_stream=%.3f adam_vs_scalar=%.2f\n", head_stream, head_scalar);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cpu_adam: %s\n", e.what());
    return 1;
  }
  return 0;
}
