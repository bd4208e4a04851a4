// Checkpoint benchmark (issue 13), under mpirun (run.sh): a synthetic host registers --params
// parameters of 2^--log2 floats each (default 16 x 2^22 = 2^26) through the C++ SDK, fp32, AdamW,
// ZeRO --stage (1 or 2: the optimizer state is partitioned), no offload, takes one step so the
// state exists, then measures per round, beside its reference taken in the same round:
//
//   save      a blocking strata_save, then strata_save_wait: the time from the call until
//             save_wait returns on the slowest rank, and the bytes of all shard files written;
//   drive     each rank writes the same number of bytes as its own shard file into the same
//             folder, sequentially in 8 MiB writes, then fsync and close, all ranks at once:
//             what the drive gives a plain writer (ratio save_vs_drive = save bandwidth / drive's);
//   pause     an asynchronous strata_save's return time on the slowest rank (the step's pause; the
//             save before it was waited for, so the runtime's buffers are warm), then save_wait;
//   memcpy    a memcpy of the rank's state bytes (its shard's size) into a warm buffer, all ranks at
//             once (ratio pause_vs_memcpy = pause / memcpy).
//
// Each figure is the median over --rounds rounds; drive and save alternate which goes first, each
// after a sync. Rank 0 prints a table and the last line
//   headline save_vs_drive=<ratio> pause_vs_memcpy=<ratio>
// Goals: save_vs_drive >= 0.8, pause_vs_memcpy <= 1.5.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <strata/strata.hpp>
#include <vector>

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  unsigned params = 16;
  unsigned log2 = 22;
  int stage = 1;
  unsigned rounds = 5;
  std::string dir;
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::string manifest(const Options& o, int world_size) {
  nlohmann::json m = {
      {"train_batch_size", world_size},
      {"gradient_accumulation_steps", 1},
      {"optimizer",
       {{"type", "AdamW"}, {"params", {{"lr", 1e-4}, {"weight_decay", 0.01}}}}},
      {"zero_optimization", {{"stage", o.stage}}}};
  return m.dump();
}

// The slowest rank's value (every rank gets it).
double slowest(strata::Runtime& runtime, double seconds) {
  return runtime.allreduce(seconds, STRATA_MAX);
}

// Writes `bytes` from `buffer` (reused) to `path` in 8 MiB writes, then fsync and close.
void write_and_fsync(const std::string& path, const std::vector<char>& buffer, uint64_t bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(path + ": open: " + std::strerror(errno));
  uint64_t done = 0;
  while (done < bytes) {
    const uint64_t chunk = std::min<uint64_t>(buffer.size(), bytes - done);
    const ssize_t n = ::write(fd, buffer.data(), chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string message = path + ": write: " + std::strerror(errno);
      ::close(fd);
      throw std::runtime_error(message);
    }
    done += uint64_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    throw std::runtime_error(path + ": fsync/close: " + std::strerror(errno));
  }
}

uint64_t folder_bytes(const fs::path& dir) {
  uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".shard") total += entry.file_size();
  }
  return total;
}

// Before each timed write: earlier writes are on the drive (sync) and every rank starts together.
void settle(strata::Runtime& runtime) {
  ::sync();
  runtime.barrier();
}

std::string own_shard(int rank) {
  char name[32];
  std::snprintf(name, sizeof(name), "rank%05d.shard", rank);
  return name;
}

int run(const Options& o) {
  const uint64_t count = uint64_t{1} << o.log2;
  // Host-owned buffers: they must outlive the runtime.
  std::vector<std::vector<float>> data(o.params), grad(o.params);
  for (unsigned p = 0; p < o.params; ++p) {
    data[p].resize(count);
    grad[p].resize(count);
    for (uint64_t i = 0; i < count; ++i) {
      data[p][i] = float((i * 2654435761u + p) % 1000) * 1e-3f - 0.5f;
      grad[p][i] = float((i * 40503u + 7 * p) % 1000) * 1e-4f - 0.05f;
    }
  }
  int world_size = 1;
  if (const char* s = std::getenv("OMPI_COMM_WORLD_SIZE")) world_size = std::atoi(s);
  strata::Runtime runtime = strata::Runtime::from_json(manifest(o, world_size));
  const strata::WorldInfo world = runtime.world();
  for (unsigned p = 0; p < o.params; ++p) {
    runtime.register_param("p" + std::to_string(p), data[p].data(), grad[p].data(), count);
  }
  runtime.finalize();
  // One step so that the optimizer state exists (Adam's moments, the fp32 masters).
  for (unsigned p = 0; p < o.params; ++p) {
    for (uint64_t i = 0; i < count; ++i) grad[p][i] = float((i * 40503u + 7 * p) % 1000) * 1e-4f;
  }
  runtime.step();

  const fs::path dir = fs::path(o.dir) / "ckpt";
  if (world.rank == 0) fs::create_directories(dir);
  runtime.barrier();

  // Warm-up: one blocking save (the runtime's buffers, the drive's allocation), which also says
  // how many bytes this rank's state is.
  runtime.barrier();
  const auto first_start = Clock::now();
  runtime.save(dir.string(), "warmup", "", false);  // asynchronous: its pause is the first one's
  const double first_pause = slowest(runtime, seconds_since(first_start));
  runtime.save_wait();
  const uint64_t own_bytes = fs::file_size(dir / "warmup" / own_shard(world.rank));
  const uint64_t all_bytes =
      world.rank == 0 ? folder_bytes(dir / "warmup") : 0;  // rank 0 reports it
  runtime.barrier();

  std::vector<char> write_buffer(std::size_t{8} << 20, 'x');
  std::vector<char> copy_src(own_bytes, 'y'), copy_dst(own_bytes, 'z');  // touched: warm
  std::memcpy(copy_dst.data(), copy_src.data(), own_bytes);

  std::vector<double> save_s, drive_s, pause_s, memcpy_s;
  std::vector<uint64_t> save_bytes;
  std::string previous = "warmup";
  auto drop = [&](const std::string& tag) {  // keep the drive's use bounded
    runtime.barrier();
    if (world.rank == 0) fs::remove_all(dir / tag);
    runtime.barrier();
  };
  for (unsigned round = 0; round < o.rounds; ++round) {
    // The drive alone: this rank's share, sequential write + fsync, all ranks at once.
    auto drive = [&] {
      const fs::path plain = dir / ("plain_rank" + std::to_string(world.rank) + ".bin");
      settle(runtime);
      const auto start = Clock::now();
      write_and_fsync(plain.string(), write_buffer, own_bytes);
      drive_s.push_back(slowest(runtime, seconds_since(start)));
      fs::remove(plain);
    };
    // A blocking save of the same state.
    auto save = [&] {
      drop(previous);
      const std::string tag = "blocking" + std::to_string(round);
      settle(runtime);
      const auto start = Clock::now();
      runtime.save(dir.string(), tag, "", true);
      runtime.save_wait();
      save_s.push_back(slowest(runtime, seconds_since(start)));
      save_bytes.push_back(world.rank == 0 ? folder_bytes(dir / tag) : 0);
      previous = tag;
    };
    // The drive's speed here swings between rounds (a virtual disk's cache flushing): alternate
    // which of the two goes first, so that neither always follows the other's writes.
    if (round % 2 == 0) {
      drive();
      save();
    } else {
      save();
      drive();
    }

    // The pause of an asynchronous save: the call's return, then the files in the background.
    drop(previous);
    const std::string async_tag = "async" + std::to_string(round);
    settle(runtime);
    auto start = Clock::now();
    runtime.save(dir.string(), async_tag, "", false);
    pause_s.push_back(slowest(runtime, seconds_since(start)));
    runtime.save_wait();
    previous = async_tag;

    // memcpy of the rank's state bytes into a warm buffer, all ranks at once.
    runtime.barrier();
    start = Clock::now();
    std::memcpy(copy_dst.data(), copy_src.data(), own_bytes);
    memcpy_s.push_back(slowest(runtime, seconds_since(start)));
  }
  drop(previous);

  if (world.rank == 0) {
    const double bytes = double(save_bytes.front());
    const double mib = 1024.0 * 1024.0;
    for (uint64_t b : save_bytes) {
      if (b != save_bytes.front()) std::printf("note: shard bytes differ between rounds\n");
    }
    const double save = median(save_s), drive = median(drive_s);
    const double pause = median(pause_s), copy = median(memcpy_s);
    // The drive reference writes exactly what the shards hold, rank by rank (own_bytes each; the
    // sum over ranks is all_bytes).
    std::printf("checkpoint: %d ranks, ZeRO stage %d, fp32 AdamW, %u params x 2^%u floats = %.0f "
                "MiB of parameters; state %.1f MiB in shard files (%.1f MiB on rank 0)\n",
                world.size, o.stage, o.params, o.log2, double(o.params) * double(count) * 4 / mib,
                bytes / mib, double(own_bytes) / mib);
    std::printf("%-26s %10s %12s   %s\n", "figure (median of rounds)", "seconds", "MiB/s",
                "rounds");
    auto row = [&](const char* name, double s, double b, const std::vector<double>& all) {
      std::string list;
      for (double v : all) list += std::to_string(v).substr(0, 6) + " ";
      if (b > 0)
        std::printf("%-26s %10.4f %12.1f   %s\n", name, s, b / mib / s, list.c_str());
      else
        std::printf("%-26s %10.4f %12s   %s\n", name, s, "", list.c_str());
    };
    row("save (blocking + wait)", save, bytes, save_s);
    row("drive (write + fsync)", drive, double(all_bytes), drive_s);
    row("async save pause", pause, 0, pause_s);
    row("memcpy of rank's state", copy, double(own_bytes), memcpy_s);
    const double save_vs_drive = (bytes / save) / (double(all_bytes) / drive);
    const double pause_vs_memcpy = pause / copy;
    std::printf("save_vs_drive %.3f (goal >= 0.8), pause_vs_memcpy %.3f (goal <= 1.5)\n",
                save_vs_drive, pause_vs_memcpy);
    // The drive's and memory's speeds swing between rounds here; the fastest rounds of each side
    // give the other view of the same run.
    const double fastest = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }(save_s);
    const double drive_fastest = *std::min_element(drive_s.begin(), drive_s.end());
    const double pause_fastest = *std::min_element(pause_s.begin(), pause_s.end());
    const double copy_fastest = *std::min_element(memcpy_s.begin(), memcpy_s.end());
    std::printf("first async save's pause %.4f s (%.1f x the memcpy): it faults in the memory the "
                "state is copied to; later saves reuse it\n", first_pause, first_pause / copy);
    std::printf("fastest rounds: save_vs_drive %.3f, pause_vs_memcpy %.3f\n",
                (bytes / fastest) / (double(all_bytes) / drive_fastest), pause_fastest / copy_fastest);
    std::printf("headline save_vs_drive=%.3f pause_vs_memcpy=%.3f\n", save_vs_drive,
                pause_vs_memcpy);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Checkpoint save bandwidth and pause beside the drive and memcpy"};
  app.add_option("--params", o.params, "Parameters registered")->capture_default_str();
  app.add_option("--log2", o.log2, "log2 of each parameter's floats")
      ->check(CLI::Range(10u, 30u))
      ->capture_default_str();
  app.add_option("--stage", o.stage, "ZeRO stage (1 or 2: the state is partitioned)")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  app.add_option("--rounds", o.rounds, "Rounds; figures are medians")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  app.add_option("--dir", o.dir, "Folder the checkpoints and the drive reference go to")
      ->required();
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
