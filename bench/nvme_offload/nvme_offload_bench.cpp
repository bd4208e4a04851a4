// Adam step time through strata_offload (its C ABI) with the optimizer state in memory (device
// none; cpu with pinned memory) and on the drive (device nvme, sub_group_size pieces through
// buffer_count buffers), beside two references measured in the same run:
//   drive r+w   the drive alone: write then read the state's bytes with O_DIRECT in 8 MiB blocks,
//               one block at a time (what an nvme step must move, with no arithmetic);
//   one piece   device nvme with a single piece: read all, step, write all, nothing overlapped.
// Each figure is the median of --steps steps after one warm-up step.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <plugin_harness.hpp>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  unsigned log2 = 24;
  unsigned steps = 5;
  uint64_t sub_group = uint64_t{1} << 22;
  std::string dir = "/tmp";
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median seconds per Adam step with this offload_optimizer block; also the disk bytes reported.
double step_seconds(const strata::test::PluginLibrary& lib, const Options& o,
                    const std::string& offload, uint64_t sub_group, uint64_t* disk_bytes) {
  const auto& ops = lib.ops<strata_offload_ops>();
  strata::test::FakeHost host;
  const std::string config = R"({"optimizer": {"type": "Adam", "params": {"lr": 0.001}},
      "offload_optimizer": )" + offload + R"(, "sub_group_size": )" + std::to_string(sub_group) + "}";
  void* self = nullptr;
  strata_error err = strata::sdk::make_error();
  if (lib.create<strata_offload_ops>(config.c_str(), host.api(), &self, &err) != STRATA_OK) {
    std::fprintf(stderr, "create failed: %s\n", err.message);
    std::exit(1);
  }
  const uint64_t n = uint64_t{1} << o.log2;
  std::vector<float> master(n), grad(n);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (uint64_t i = 0; i < n; ++i) {
    master[i] = normal(rng);
    grad[i] = normal(rng);
  }
  strata_shard shard{};
  shard.struct_size = sizeof(shard);
  shard.count = n;
  shard.master = master.data();
  shard.grad = grad.data();
  if (ops.init_state(self, &shard, 1, &err) != STRATA_OK) {
    std::fprintf(stderr, "init_state failed: %s\n", err.message);
    std::exit(1);
  }
  *disk_bytes = host.located(STRATA_MEM_DISK, STRATA_MEM_OPTIMIZER_STATE);
  std::vector<double> times;
  for (unsigned t = 0; t <= o.steps; ++t) {
    const strata_step_args args = strata::sdk::make_step_args(t + 1, 1.0, 1.0);
    const auto start = Clock::now();
    if (ops.step(self, &shard, 1, &args, &err) != STRATA_OK) {
      std::fprintf(stderr, "step failed: %s\n", err.message);
      std::exit(1);
    }
    if (t > 0) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  ops.destroy(self);
  return median(times);
}

// Write then read `bytes` in 8 MiB O_DIRECT blocks in `dir`: the drive's time for one step's I/O.
double drive_seconds(const Options& o, uint64_t bytes) {
  const std::string path = o.dir + "/strata-drive-reference.bin";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
  if (fd < 0) fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) {
    std::perror(path.c_str());
    std::exit(1);
  }
  ::unlink(path.c_str());
  constexpr size_t kBlock = size_t{8} << 20;
  void* block = std::aligned_alloc(4096, kBlock);
  std::memset(block, 1, kBlock);
  std::vector<double> times;
  for (unsigned t = 0; t <= o.steps; ++t) {
    const auto start = Clock::now();
    for (uint64_t off = 0; off < bytes; off += kBlock) {
      if (::pwrite(fd, block, kBlock, static_cast<off_t>(off)) != static_cast<ssize_t>(kBlock)) {
        std::perror("pwrite");
        std::exit(1);
      }
    }
    for (uint64_t off = 0; off < bytes; off += kBlock) {
      if (::pread(fd, block, kBlock, static_cast<off_t>(off)) != static_cast<ssize_t>(kBlock)) {
        std::perror("pread");
        std::exit(1);
      }
    }
    if (t > 0) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::free(block);
  ::close(fd);
  return median(times);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"strata_offload: Adam step time with the state on the drive vs in memory"};
  app.add_option("--log2", o.log2, "log2 of the parameter count")->capture_default_str();
  app.add_option("--steps", o.steps, "Timed steps per configuration")->capture_default_str();
  app.add_option("--sub-group", o.sub_group, "sub_group_size for the piecewise nvme rows")
      ->capture_default_str();
  app.add_option("--dir", o.dir, "Directory on the drive (nvme_path)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const strata::test::PluginLibrary lib(STRATA_OFFLOAD_PLUGIN);
  const uint64_t n = uint64_t{1} << o.log2;
  const std::string nvme = R"({"device": "nvme", "nvme_path": ")" + o.dir + R"(", "buffer_count": )";
  uint64_t disk = 0, none_disk = 0;
  struct Row {
    std::string name;
    double seconds;
  };
  std::vector<Row> rows;
  rows.push_back({"memory (device none)", step_seconds(lib, o, R"({"device": "none"})", n, &none_disk)});
  rows.push_back({"memory (cpu, pinned)",
                  step_seconds(lib, o, R"({"device": "cpu", "pin_memory": true})", n, &none_disk)});
  const double pipelined2 = step_seconds(lib, o, nvme + "2}", o.sub_group, &disk);
  rows.push_back({"nvme, 2 buffers", pipelined2});
  const double pipelined4 = step_seconds(lib, o, nvme + "4}", o.sub_group, &disk);
  rows.push_back({"nvme, 4 buffers", pipelined4});
  uint64_t one_piece_disk = 0;
  const double one_piece = step_seconds(lib, o, nvme + "2}", n, &one_piece_disk);
  rows.push_back({"nvme, one piece (no overlap)", one_piece});
  const double drive = drive_seconds(o, disk);
  rows.push_back({"drive r+w of the state only", drive});

  const double memory = rows[0].seconds;
  std::printf("Adam, %llu parameters (2^%u), state %.1f MiB on disk, sub_group_size %llu "
              "(%llu pieces), median of %u steps\n",
              static_cast<unsigned long long>(n), o.log2, static_cast<double>(disk) / (1 << 20),
              static_cast<unsigned long long>(o.sub_group),
              static_cast<unsigned long long>((n + o.sub_group - 1) / o.sub_group), o.steps);
  std::printf("%-32s %12s %12s %14s\n", "configuration", "step ms", "vs memory", "Mparam/s");
  for (const Row& r : rows) {
    std::printf("%-32s %12.1f %12.2f %14.1f\n", r.name.c_str(), r.seconds * 1e3, r.seconds / memory,
                static_cast<double>(n) / r.seconds / 1e6);
  }
  const double best = std::min(pipelined2, pipelined4);
  std::printf("headline nvme_vs_memory=%.2f nvme_vs_drive=%.2f overlap_gain=%.2f\n", best / memory,
              best / drive, one_piece / best);
  return 0;
}
