// Times the comm plugin's allreduce (f32 SUM, through its C ABI) against raw MPI_Allreduce on the
// same buffers, 1 KiB to 64 MiB. Prints bus bandwidth busbw = 2(n-1)/n * bytes / time (the
// NCCL-tests convention: the bytes each rank must move in a ring algorithm) and their ratio.
// Each iteration runs both back to back after a barrier, so drift hits both alike; a time is the
// slowest rank's, a figure the median over iterations.
#include <plugin_harness.hpp>

#include <CLI/CLI.hpp>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace {

struct Timing {
  double mpi_seconds;
  double plugin_seconds;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int iterations_for(size_t bytes) {
  if (bytes >= (size_t{16} << 20)) return 5;
  if (bytes >= (size_t{1} << 20)) return 15;
  return 61;
}

// Median over iterations of the slowest rank's time for each variant.
Timing measure(const strata_comm_ops& ops, void* self, float* send, float* recv, size_t count) {
  const int iterations = iterations_for(count * sizeof(float));
  const int warmup = std::max(2, iterations / 4);
  std::vector<double> mpi_times, plugin_times;
  strata_buffer send_buf = strata::sdk::host_buffer(send, count, STRATA_F32);
  strata_buffer recv_buf = strata::sdk::host_buffer(recv, count, STRATA_F32);
  strata_coll_args args = strata::sdk::Comm::args(&send_buf, &recv_buf);
  args.op = STRATA_SUM;
  strata_error err = strata::sdk::make_error();
  for (int i = 0; i < warmup + iterations; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    MPI_Allreduce(send, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const double mpi = MPI_Wtime() - start;
    MPI_Barrier(MPI_COMM_WORLD);
    start = MPI_Wtime();
    if (ops.allreduce(self, &args, nullptr, &err) != STRATA_OK) {
      std::fprintf(stderr, "plugin allreduce failed: %s\n", err.message);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const double plugin = MPI_Wtime() - start;
    if (i >= warmup) {
      mpi_times.push_back(mpi);
      plugin_times.push_back(plugin);
    }
  }
  const int n = static_cast<int>(mpi_times.size());
  MPI_Allreduce(MPI_IN_PLACE, mpi_times.data(), n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, plugin_times.data(), n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return {median(mpi_times), median(plugin_times)};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Allreduce bandwidth: strata_allreduce_mpi plugin vs raw MPI_Allreduce"};
  std::string plugin_path = STRATA_ALLREDUCE_MPI_PLUGIN;
  std::string config = "{}";
  size_t min_bytes = 1024, max_bytes = size_t{64} << 20;
  app.add_option("--plugin", plugin_path, "plugin library to load");
  app.add_option("--config", config, "the plugin's config object, e.g. {\"chunk_bytes\": 4194304}");
  app.add_option("--min-bytes", min_bytes, "smallest message size (sizes grow x4 from it)");
  app.add_option("--max-bytes", max_bytes, "largest message size");
  CLI11_PARSE(app, argc, argv);

  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  strata::test::PluginLibrary library(plugin_path);
  strata::test::FakeHost host;
  const auto& ops = library.ops<strata_comm_ops>();
  void* self = nullptr;
  strata_error err = strata::sdk::make_error();
  if (library.create<strata_comm_ops>(config.c_str(), host.api(), &self, &err) != STRATA_OK) {
    std::fprintf(stderr, "create failed: %s\n", err.message);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  const size_t max_count = max_bytes / sizeof(float);
  std::vector<float> send(max_count, 1.0f), recv(max_count, 0.0f);
  const double bus_factor = size > 1 ? 2.0 * (size - 1) / size : 1.0;
  double lowest_ratio_from_1mib = 1e300;
  if (rank == 0) {
    std::printf("allreduce f32 SUM, %d ranks, plugin config %s\n", size, config.c_str());
    std::printf("%12s %14s %17s %8s\n", "bytes", "mpi_busbw_GB/s", "plugin_busbw_GB/s", "ratio");
  }
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const Timing t = measure(ops, self, send.data(), recv.data(), bytes / sizeof(float));
    const double mpi_bw = bus_factor * bytes / t.mpi_seconds / 1e9;
    const double plugin_bw = bus_factor * bytes / t.plugin_seconds / 1e9;
    const double ratio = plugin_bw / mpi_bw;
    if (bytes >= (size_t{1} << 20))
      lowest_ratio_from_1mib = std::min(lowest_ratio_from_1mib, ratio);
    if (rank == 0) std::printf("%12zu %14.2f %17.2f %8.2f\n", bytes, mpi_bw, plugin_bw, ratio);
  }
  if (rank == 0) {
    std::printf("headline ranks=%d plugin_vs_mpi_min=%.2f\n", size, lowest_ratio_from_1mib);
  }
  ops.destroy(self);
  MPI_Finalize();
  return 0;
}
