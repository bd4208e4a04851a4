// Throughput of strata_amp (through its C ABI) on large buffers: cast f32 -> f16, f32 -> bf16 and
// grad_stats, each beside a memcpy of the same source bytes measured in the same run, on the same
// number of threads (memcpy split the way the plugin splits its loops). GB/s counts the fp32
// source bytes: 4 bytes per element for every row.
//
// grad_stats is the whole "unscale + check" pass Strata makes over the gradients: the unscale
// multiply (1 / (loss_scale * clip)) is fused into the optimizer's own pass, so this pass only
// reads (non-finite flag and fp64 sum of squares); its memcpy reference reads and writes.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <plugin_harness.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds(const std::function<void()>& run) {
  const auto start = Clock::now();
  run();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// memcpy over `threads` contiguous pieces, one std::thread each but the caller's (as the plugin).
void parallel_memcpy(void* dst, const void* src, size_t bytes, unsigned threads) {
  const size_t piece = (bytes / threads + 4095) / 4096 * 4096;
  std::vector<std::jthread> workers;
  for (unsigned t = 1; t < threads; ++t) {
    const size_t begin = std::min(bytes, t * piece), end = std::min(bytes, begin + piece);
    if (begin < end) {
      workers.emplace_back([=] {
        std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin,
                    end - begin);
      });
    }
  }
  std::memcpy(dst, src, std::min(bytes, piece));
}

std::string& setup_line() {
  static std::string line;
  return line;
}

void check(strata_status status, const strata_error& err, const char* what) {
  if (status != STRATA_OK) {
    std::fprintf(stderr, "%s failed: %s\n", what, err.message);
    std::exit(1);
  }
}

struct Row {
  const char* kind;
  double seconds, memcpy_seconds;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"strata_amp casts and grad_stats vs memcpy of the same bytes"};
  std::string plugin_path = STRATA_AMP_PLUGIN;
  int min_log2 = 24, max_log2 = 26, iterations = 7;
  std::vector<unsigned> thread_counts = {1, std::max(1u, std::thread::hardware_concurrency())};
  app.add_option("--plugin", plugin_path, "plugin library to load");
  app.add_option("--min-log2", min_log2, "smallest buffer, 2^N elements");
  app.add_option("--max-log2", max_log2, "largest buffer, 2^N elements");
  app.add_option("--iterations", iterations, "timed repetitions (median reported)");
  app.add_option("--threads", thread_counts, "thread counts to run (plugin config `threads`)");
  CLI11_PARSE(app, argc, argv);

  const strata::test::PluginLibrary library(plugin_path);
  const auto& ops = library.ops<strata_precision_ops>();
  strata::test::FakeHost host;
  // The plugin's info line (instruction set, threads) heads the table: let it through.
  host.api()->log_enabled = [](void*, int32_t) -> int32_t { return 1; };
  host.api()->log = [](void*, int32_t level, const char* message) {
    if (level == STRATA_LOG_INFO) setup_line() = message;
    if (level >= STRATA_LOG_WARN) std::fprintf(stderr, "[plugin] %s\n", message);
  };

  const size_t max_n = size_t{1} << max_log2;
  std::vector<float> src(max_n), copy(max_n);
  std::vector<uint16_t> half(max_n);
  for (size_t i = 0; i < max_n; ++i) src[i] = static_cast<float>(i % 4099) * 0.37f - 700.0f;
  std::memset(copy.data(), 1, copy.size() * sizeof(float));  // fault every page in up front
  std::memset(half.data(), 1, half.size() * sizeof(uint16_t));

  double cast_ratio = 1e9, stats_ratio = 1e9;
  bool first = true;
  for (unsigned threads : thread_counts) {
    void* self = nullptr;
    strata_error err = strata::sdk::make_error();
    const std::string config = R"({"threads": )" + std::to_string(threads) + "}";
    check(library.create<strata_precision_ops>(config.c_str(), host.api(), &self, &err), err,
          "create");
    if (first) {
      std::printf(
          "plugin: %s\nGB/s = fp32 source bytes / time; ratio = memcpy time / kind time "
          "(>= 1: at least as fast as copying the same bytes)\n"
          "grad_stats = the unscale+check pass: read-only, because Strata fuses the "
          "unscale multiply into the optimizer pass\n\n",
          setup_line().c_str());
      std::printf("%12s %7s %-12s %10s %12s %7s\n", "elements", "threads", "kind", "GB/s",
                  "memcpy GB/s", "ratio");
      first = false;
    }
    for (int lg = min_log2; lg <= max_log2; ++lg) {
      const size_t n = size_t{1} << lg;
      const strata_buffer in = strata::sdk::host_buffer(src.data(), n, STRATA_F32);
      const strata_buffer f16 = strata::sdk::host_buffer(half.data(), n, STRATA_F16);
      const strata_buffer bf16 = strata::sdk::host_buffer(half.data(), n, STRATA_BF16);
      strata_shard shard{};
      shard.struct_size = sizeof shard;
      shard.count = n;
      shard.master = copy.data();
      shard.grad = src.data();
      const std::function<void()> kinds[] = {
          [&] { check(ops.cast(self, &in, &f16, &err), err, "cast f16"); },
          [&] { check(ops.cast(self, &in, &bf16, &err), err, "cast bf16"); },
          [&] {
            strata_grad_stats st{};
            st.struct_size = sizeof st;
            check(ops.grad_stats(self, &shard, 1, &st, &err), err, "grad_stats");
          }};
      const char* names[] = {"f32->f16", "f32->bf16", "grad_stats"};
      for (int k = 0; k < 3; ++k) {
        std::vector<double> t, m;
        for (int it = 0; it < iterations + 2; ++it) {  // two warm-up rounds
          const double tm =
              seconds([&] { parallel_memcpy(copy.data(), src.data(), n * 4, threads); });
          const double tk = seconds(kinds[k]);
          if (it >= 2) {
            m.push_back(tm);
            t.push_back(tk);
          }
        }
        std::sort(t.begin(), t.end());
        std::sort(m.begin(), m.end());
        const Row r{names[k], t[t.size() / 2], m[m.size() / 2]};
        const double gb = static_cast<double>(n) * 4 / 1e9, ratio = r.memcpy_seconds / r.seconds;
        std::printf("%12zu %7u %-12s %10.2f %12.2f %7.2f\n", n, threads, r.kind, gb / r.seconds,
                    gb / r.memcpy_seconds, ratio);
        (k < 2 ? cast_ratio : stats_ratio) = std::min(k < 2 ? cast_ratio : stats_ratio, ratio);
      }
    }
    ops.destroy(self);
  }
  std::printf("\nheadline cast_vs_memcpy=%.2f unscale_vs_memcpy=%.2f\n", cast_ratio, stats_ratio);
  return 0;
}
