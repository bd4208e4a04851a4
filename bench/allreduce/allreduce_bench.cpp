// Times the comm plugin's allreduce (f32 SUM, through its C ABI) against raw MPI_Allreduce on the
// same buffers, 1 KiB to 256 MiB (x4 steps). Three variants per size:
//   mpi         raw MPI_Allreduce of the whole message;
//   plugin-mpi  the plugin with --config plus {"shm": false} (its pure-MPI path);
//   plugin-shm  the plugin with --config plus {"shm_min_bytes": 0} plus --shm-config (every size
//               through the shared-memory path when the ranks share a host).
// Prints bus bandwidth busbw = 2(n-1)/n * bytes / time (the NCCL-tests convention: the bytes each
// rank must move in a ring algorithm) and the ratios shm/mpi and plugin-mpi/mpi.
// Each iteration runs the three back to back, each after a barrier, so drift hits all alike; a
// time is the slowest rank's, a figure the median over iterations.
// Before timing a size, each variant runs once into a poisoned receive buffer and its result is
// checked element by element against the exact sum (the data are small integers, so every
// variant's f32 sum is exact whatever its order): a fast but wrong path aborts the run.
// Memory per rank: one send and one receive buffer of the largest size, shared by the variants.
#include <plugin_harness.hpp>

#include <CLI/CLI.hpp>
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

constexpr int kVariants = 3;
constexpr const char* kNames[kVariants] = {"mpi", "plugin-mpi", "plugin-shm"};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Enough iterations for a stable median; a 4-rank run on 2 cores must finish in a few minutes.
int iterations_for(size_t bytes) {
  if (bytes >= (size_t{64} << 20)) return 5;
  if (bytes >= (size_t{16} << 20)) return 7;
  if (bytes >= (size_t{1} << 20)) return 15;
  return 61;
}

// The element i of rank r's input: small integers, so sums over a few ranks are exact in f32.
float input_value(size_t i, int rank) { return static_cast<float>(static_cast<int>(i % 61) + rank); }

struct Variant {
  const strata_comm_ops* ops = nullptr;  // nullptr: raw MPI_Allreduce
  void* self = nullptr;
};

void run_once(const Variant& v, float* send, float* recv, size_t count) {
  if (v.ops == nullptr) {
    MPI_Allreduce(send, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    return;
  }
  strata_buffer send_buf = strata::sdk::host_buffer(send, count, STRATA_F32);
  strata_buffer recv_buf = strata::sdk::host_buffer(recv, count, STRATA_F32);
  strata_coll_args args = strata::sdk::Comm::args(&send_buf, &recv_buf);
  args.op = STRATA_SUM;
  strata_error err = strata::sdk::make_error();
  if (v.ops->allreduce(v.self, &args, nullptr, &err) != STRATA_OK) {
    std::fprintf(stderr, "plugin allreduce failed: %s\n", err.message);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

// Runs `v` once into a poisoned `recv` and aborts the job if any element differs from the sum.
void verify(const Variant& v, const char* name, float* send, float* recv, size_t count, int size) {
  std::fill(recv, recv + count, std::numeric_limits<float>::quiet_NaN());
  MPI_Barrier(MPI_COMM_WORLD);
  run_once(v, send, recv, count);
  const int rank_sum = size * (size - 1) / 2;
  long long bad = -1;
  for (size_t i = 0; i < count; ++i) {
    const float want = static_cast<float>(size * static_cast<int>(i % 61) + rank_sum);
    if (recv[i] != want) {
      bad = static_cast<long long>(i);
      break;
    }
  }
  long long first_bad = bad;
  MPI_Allreduce(&bad, &first_bad, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  if (first_bad >= 0) {
    if (bad >= 0) {
      std::fprintf(stderr, "WRONG RESULT: %s, %zu bytes: element %lld is %g, expected %g\n", name,
                   count * sizeof(float), bad, static_cast<double>(recv[bad]),
                   static_cast<double>(size * static_cast<int>(bad % 61) + rank_sum));
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

// Median over iterations of the slowest rank's time for each variant.
std::array<double, kVariants> measure(const std::array<Variant, kVariants>& variants, float* send,
                                      float* recv, size_t count) {
  const int iterations = iterations_for(count * sizeof(float));
  const int warmup = std::max(1, iterations / 4);
  std::array<std::vector<double>, kVariants> times;
  for (int i = 0; i < warmup + iterations; ++i) {
    for (int v = 0; v < kVariants; ++v) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      run_once(variants[v], send, recv, count);
      const double seconds = MPI_Wtime() - start;
      if (i >= warmup) times[v].push_back(seconds);
    }
  }
  std::array<double, kVariants> result{};
  for (int v = 0; v < kVariants; ++v) {
    const int n = static_cast<int>(times[v].size());
    MPI_Allreduce(MPI_IN_PLACE, times[v].data(), n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    result[v] = median(times[v]);
  }
  return result;
}

// `base` with `overrides`' keys set (both JSON objects).
std::string merged(const std::string& base, const nlohmann::json& overrides) {
  nlohmann::json config = base.empty() ? nlohmann::json::object() : nlohmann::json::parse(base);
  config.merge_patch(overrides);
  return config.dump();
}

// The host's log, except that rank 0 also prints the plugin's create() line (it says whether
// the shm path is on, its chunk size and how its waits behave).
int g_rank = 0;
void bench_log(void*, int32_t level, const char* msg) {
  if (level >= STRATA_LOG_WARN) {
    std::fprintf(stderr, "[plugin] %s\n", msg);
  } else if (g_rank == 0 && std::strstr(msg, "shm ") != nullptr) {
    std::printf("# plugin: %s\n", msg);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Allreduce bandwidth: strata_allreduce_mpi plugin (MPI and shm paths) vs raw "
               "MPI_Allreduce"};
  std::string plugin_path = STRATA_ALLREDUCE_MPI_PLUGIN;
  std::string config = "{}", shm_config = "{}";
  size_t min_bytes = 1024, max_bytes = size_t{256} << 20;
  app.add_option("--plugin", plugin_path, "plugin library to load");
  app.add_option("--config", config,
                 "config object for both plugin instances, e.g. {\"chunk_bytes\": 4194304}");
  app.add_option("--shm-config", shm_config,
                 "merged into the shm instance's config only, e.g. {\"shm_chunk_bytes\": 131072}");
  app.add_option("--min-bytes", min_bytes, "smallest message size (sizes grow x4 from it)");
  app.add_option("--max-bytes", max_bytes, "largest message size");
  CLI11_PARSE(app, argc, argv);

  std::string mpi_config, shm_full_config;
  try {
    mpi_config = merged(config, {{"shm", false}});
    shm_full_config =
        merged(merged(config, {{"shm_min_bytes", 0}}), nlohmann::json::parse(shm_config));
  } catch (const nlohmann::json::exception& e) {
    std::fprintf(stderr, "--config / --shm-config: %s\n", e.what());
    return 1;
  }

  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  g_rank = rank;

  strata::test::PluginLibrary library(plugin_path);
  strata::test::FakeHost host;
  host.api()->log = bench_log;
  const auto& ops = library.ops<strata_comm_ops>();
  std::array<Variant, kVariants> variants{};
  const std::string* configs[kVariants] = {nullptr, &mpi_config, &shm_full_config};
  for (int v = 1; v < kVariants; ++v) {
    strata_error err = strata::sdk::make_error();
    variants[v].ops = &ops;
    if (library.create<strata_comm_ops>(configs[v]->c_str(), host.api(), &variants[v].self,
                                        &err) != STRATA_OK) {
      std::fprintf(stderr, "create (%s) failed: %s\n", configs[v]->c_str(), err.message);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }

  const size_t max_count = max_bytes / sizeof(float);
  std::vector<float> send(max_count), recv(max_count, 0.0f);
  for (size_t i = 0; i < max_count; ++i) send[i] = input_value(i, rank);
  const double bus_factor = size > 1 ? 2.0 * (size - 1) / size : 1.0;
  const double inf = std::numeric_limits<double>::infinity();
  double plugin_min_from_1mib = inf, shm_min_from_16mib = inf, shm_min = inf;
  if (rank == 0) {
    std::printf("allreduce f32 SUM, %d ranks; plugin-mpi config %s; plugin-shm config %s\n", size,
                mpi_config.c_str(), shm_full_config.c_str());
    std::printf("%12s %12s %12s %12s %8s %8s   (busbw GB/s)\n", "bytes", "mpi", "plugin-mpi",
                "plugin-shm", "shm/mpi", "pmpi/mpi");
    std::fflush(stdout);
  }
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    for (int v = 0; v < kVariants; ++v) verify(variants[v], kNames[v], send.data(), recv.data(), count, size);
    const std::array<double, kVariants> t = measure(variants, send.data(), recv.data(), count);
    std::array<double, kVariants> bw{};
    for (int v = 0; v < kVariants; ++v) bw[v] = bus_factor * bytes / t[v] / 1e9;
    const double shm_ratio = bw[2] / bw[0];
    const double plugin_ratio = bw[1] / bw[0];
    shm_min = std::min(shm_min, shm_ratio);
    if (bytes >= (size_t{16} << 20)) shm_min_from_16mib = std::min(shm_min_from_16mib, shm_ratio);
    if (bytes >= (size_t{1} << 20)) plugin_min_from_1mib = std::min(plugin_min_from_1mib, plugin_ratio);
    if (rank == 0) {
      std::printf("%12zu %12.3f %12.3f %12.3f %8.2f %8.2f\n", bytes, bw[0], bw[1], bw[2],
                  shm_ratio, plugin_ratio);
      std::fflush(stdout);
    }
  }
  if (rank == 0) {
    // A key whose sizes the run did not cover prints as "nan".
    auto figure = [](double x) {
      if (std::isinf(x)) return std::string("nan");
      char text[32];
      std::snprintf(text, sizeof text, "%.2f", x);
      return std::string(text);
    };
    std::printf("headline ranks=%d shm_vs_mpi_16mib_up=%s shm_vs_mpi_min=%s plugin_vs_mpi_min=%s\n",
                size, figure(shm_min_from_16mib).c_str(), figure(shm_min).c_str(),
                figure(plugin_min_from_1mib).c_str());
  }
  for (int v = 1; v < kVariants; ++v) ops.destroy(variants[v].self);
  MPI_Finalize();
  return 0;
}
