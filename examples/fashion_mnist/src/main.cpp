// fashion_mnist — trains a 784-256-128-10 MLP on Fashion-MNIST, data-parallel through Strata.
//
//   mpirun -np 4 fashion_mnist --epochs 10 [--manifest FILE] [--overrides JSON] [--batch N]
//                              [--data-dir DIR] [--hidden 256,128] [--max-steps N]
//                              [--save-dir DIR --save-every N] [--resume DIR|DIR/TAG]
//                              [--resume-if-present DIR]
//                              [--loss-log FILE] [--dump-params FILE]
//                              [--dump-initial-params FILE] [--dump-order FILE]
//                              [--time-report [--time-report-skip N]]
//                              [--device cpu|cuda [--share-device]]
//
// The manifest decides how ranks communicate, shard, round and step; this program only does
// forward and backward. Swapping strategies is an edit of the manifest, not a rebuild.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <strata/strata.hpp>
#include <string>
#include <vector>

#include "../cuda/gpu_session.hpp"
#include "dataset.hpp"
#include "loss_log.hpp"
#include "mlp.hpp"
#include "param_file.hpp"
#include "resume_state.hpp"
#include "runtime_layers.hpp"
#include "trainer.hpp"

namespace fs = std::filesystem;
using namespace strata::fmnist;

namespace {

struct Options {
  int epochs = 10;
  std::string manifest;
  uint64_t seed = 1;
  uint64_t batch = 0;  // 0: the manifest's train_batch_size
  std::string data_dir = default_data_dir();
  uint64_t max_steps = 0;
  std::string dump_params;
  std::string dump_initial_params;
  std::string dump_order;
  bool time_report = false;
  uint64_t time_report_skip = 10;
  std::string overrides;                     // a JSON merge patch over the manifest
  std::vector<std::size_t> hidden{256, 128};  // hidden layer widths
  std::string save_dir;
  uint64_t save_every = 0;
  std::string resume;
  std::string resume_if_present;
  std::string loss_log;
  std::string device = "cpu";  // "cuda": forward and backward on a CUDA device (cuda/)
  bool share_device = false;
};

// STRATA_MANIFEST (strata-run --manifest sets it on every rank); otherwise an installed binary
// finds its manifests in ../share/strata/manifests and a build-tree binary in the source tree it
// was built from. --manifest wins over all of them.
std::string default_manifest() {
  if (const char* env = std::getenv("STRATA_MANIFEST"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path() / "../share/strata/manifests/default.json";
    if (fs::exists(installed)) return installed.lexically_normal().string();
  }
  return STRATA_EXAMPLE_MANIFEST_DIR "/default.json";
}

// --batch replaces the global batch and lets the runtime derive the micro-batch from it, the
// world size and the manifest's gradient_accumulation_steps (DeepSpeed's rule). Deleting the
// micro-batch key (null in a merge patch) avoids a contradiction with a manifest that sets all
// three.
// --overrides is the base of the patch, --batch's keys are set over it.
std::string overrides(const Options& options) {
  nlohmann::json patch = nlohmann::json::object();
  if (!options.overrides.empty()) {
    try {
      patch = nlohmann::json::parse(options.overrides);
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error("--overrides: malformed JSON (" + std::string(e.what()) + ")");
    }
    if (!patch.is_object()) throw std::runtime_error("--overrides: not a JSON object");
  }
  if (options.batch != 0) {
    patch["train_batch_size"] = options.batch;
    patch["train_micro_batch_size_per_gpu"] = nullptr;
  }
  return patch.empty() ? std::string{} : patch.dump();
}

// --dump-order: each epoch's training-set permutation as raw uint32 (native byte order), one
// after the other, the file truncated when the run starts. For hosts in other languages that must
// see the very same samples (examples/fashion_mnist_torch/train.py --order).
class OrderFile {
 public:
  explicit OrderFile(const std::string& path)
      : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
    if (!out_) throw std::runtime_error("--dump-order: cannot open " + path + " for writing");
  }
  void write(std::span<const uint32_t> order) {
    out_.write(reinterpret_cast<const char*>(order.data()),
               static_cast<std::streamsize>(order.size_bytes()));
    if (!out_.flush()) throw std::runtime_error("--dump-order: write to " + path_ + " failed");
  }

 private:
  std::string path_;
  std::ofstream out_;
};

void print_epoch(const EpochStats& s, int epochs) {
  std::printf(
      "epoch %d/%d  step %llu  train_loss %.4f  test_acc %.4f  grad_norm %.3f  "
      "samples/s %.0f  time %.2fs%s\n",
      s.epoch, epochs, static_cast<unsigned long long>(s.global_steps), s.train_loss,
      s.test_accuracy, s.grad_norm, s.samples_per_second, s.seconds,
      s.stopped_early ? "  (stopped: --max-steps)" : "");
  if (s.timed_steps > 0) {
    const strata::StepResult::Time& t = s.step_time;
    std::printf(
        "time per step (ms): wall %.2f = host %.2f + comm wait %.2f + optimizer %.2f + gather "
        "%.2f + other runtime %.2f (runtime share %.2f)\n",
        t.wall * 1e3, t.host * 1e3, t.comm_wait * 1e3, t.optimizer * 1e3, t.gather * 1e3,
        t.runtime_other * 1e3, t.wall > 0 ? t.runtime() / t.wall : 0.0);
  }
  std::fflush(stdout);
}

// --time-report: every rank keeps each optimizer step's time split, bar the first `skip` steps
// of the run and the first step of every later epoch (its wall holds the evaluation before it).
// At the end, rank 0 prints one line of seconds per step, each part the mean over ranks, plus
// how the host's own work differs between ranks: host_min/host_max are the fastest and slowest
// rank's mean host time per step, and imbalance_wait is the mean over ranks and steps of
// (the slowest rank's host time in that step − this rank's), the part of comm_wait a rank would
// spend waiting for the others' forward/backward even over a free network. Collective.
class TimeReport {
 public:
  explicit TimeReport(uint64_t skip) : skip_(skip) {}

  void on_step(const strata::StepResult& r) {
    if (seen_++ < skip_ || epoch_start_) {
      epoch_start_ = false;
      return;
    }
    times_.push_back(r.time);
  }
  void on_epoch() { epoch_start_ = true; }

  void print(strata::Runtime& runtime) const {
    const auto world = runtime.world();
    const std::size_t n = times_.size();  // the same on every rank
    double sums[6] = {};
    std::vector<double> host_max(n);
    for (std::size_t i = 0; i < n; ++i) {
      const strata::StepResult::Time& t = times_[i];
      const double parts[6] = {t.wall,      t.host,   t.comm_wait,
                               t.optimizer, t.gather, t.runtime_other};
      for (int k = 0; k < 6; ++k) sums[k] += parts[k];
      host_max[i] = t.host;
    }
    const double steps = n > 0 ? double(n) : 1.0;
    double own_host = sums[1] / steps;
    double host_min = own_host, host_max_rank = own_host;
    if (n > 0) runtime.allreduce(host_max.data(), n, STRATA_MAX);
    double imbalance = 0.0;
    for (std::size_t i = 0; i < n; ++i) imbalance += host_max[i] - times_[i].host;
    imbalance /= steps;
    runtime.allreduce(sums, 6, STRATA_SUM);
    runtime.allreduce(&imbalance, 1, STRATA_SUM);
    runtime.allreduce(&host_max_rank, 1, STRATA_MAX);
    host_min = -host_min;
    runtime.allreduce(&host_min, 1, STRATA_MAX);
    host_min = -host_min;
    if (world.rank != 0) return;
    const double mean = 1.0 / (steps * double(world.size));
    std::printf(
        "step_time steps=%zu ranks=%d wall=%.6g host=%.6g comm_wait=%.6g optimizer=%.6g "
        "gather=%.6g runtime_other=%.6g host_min=%.6g host_max=%.6g imbalance_wait=%.6g\n",
        n, world.size, sums[0] * mean, sums[1] * mean, sums[2] * mean, sums[3] * mean,
        sums[4] * mean, sums[5] * mean, host_min, host_max_rank, imbalance / double(world.size));
    std::fflush(stdout);
  }

 private:
  uint64_t skip_;
  uint64_t seen_ = 0;
  bool epoch_start_ = false;
  std::vector<strata::StepResult::Time> times_;
};

int train(const Options& options) {
  // Data first: a missing file fails before any rank starts talking to the others.
  const Dataset train_set = load_fashion_mnist(options.data_dir, Split::train);
  const Dataset test_set = load_fashion_mnist(options.data_dir, Split::test);

  // Declared before the runtime: it holds the device buffers registered with it.
  std::unique_ptr<GpuSession> gpu;
  strata::Runtime runtime(options.manifest, overrides(options));
  const auto world = runtime.world();
  const auto training = runtime.training();

  std::vector<std::size_t> sizes{train_set.features};
  sizes.insert(sizes.end(), options.hidden.begin(), options.hidden.end());
  sizes.push_back(train_set.classes);
  Mlp model(sizes);
  model.init(options.seed);  // the same on every rank; finalize broadcasts rank 0's anyway
  // Both finalize the runtime: every rank now holds rank 0's values.
  std::optional<RuntimeLayers> cpu_layers;
  if (options.device == "cuda") {
    gpu = connect_gpu(runtime, model, GpuOptions{options.share_device});
  } else {
    cpu_layers.emplace(runtime, model);
  }
  Model& trained = gpu ? gpu->model() : static_cast<Model&>(model);
  // Collective; the values as the runtime holds them (rounded, if half).
  auto copy_to_model = [&] { gpu ? gpu->copy_to_model(model) : cpu_layers->copy_to_model(); };
  if (!options.dump_initial_params.empty()) {
    copy_to_model();
    if (world.rank == 0) write_params(options.dump_initial_params, model);
  }

  TrainConfig config;
  config.epochs = options.epochs;
  config.seed = options.seed;
  config.max_steps = options.max_steps;
  config.global_step_loss = !options.loss_log.empty();
  // --resume-if-present DIR: the same as --resume DIR when DIR has a latest checkpoint (a job
  // strata-run restarted after a failure), else a fresh start. Every rank sees the same folder.
  std::string resume_from = options.resume;
  if (!options.resume_if_present.empty() && fs::exists(fs::path(options.resume_if_present) / "latest")) {
    resume_from = options.resume_if_present;
  }
  std::optional<uint64_t> resumed_at;
  // The manifest's checkpoint block may have resumed already, at finalize (auto_resume).
  const std::optional<strata::LoadResult> auto_resumed = runtime.resumed();
  if (auto_resumed && !resume_from.empty()) {
    throw std::runtime_error("the manifest's checkpoint block resumed from " + auto_resumed->tag +
                             " already: drop --resume/--resume-if-present, or auto_resume");
  }
  if (!resume_from.empty() || auto_resumed) {
    const char* auto_dir = std::getenv("STRATA_CHECKPOINT_DIR");
    const ResumedState state =
        auto_resumed ? resumed_state(runtime, *auto_resumed, auto_dir != nullptr ? auto_dir : "checkpoint block",
                                     training.train_batch_size, options.seed)
                     : resume(runtime, resume_from, training.train_batch_size, options.seed);  // collective
    config.start = state.next;
    config.seed = state.seed;
    config.start_global_steps = state.global_steps;
    resumed_at = state.global_steps;
  }
  Trainer trainer(runtime, trained, train_set, &test_set, config);
  if (world.rank == 0) {
    std::printf(
        "fashion_mnist: %d ranks, global batch %llu = micro %llu x accumulation %llu x %d "
        "ranks, %zu train / %zu test samples%s%s\n",
        world.size, static_cast<unsigned long long>(training.train_batch_size),
        static_cast<unsigned long long>(training.micro_batch_size),
        static_cast<unsigned long long>(training.gradient_accumulation_steps), world.size,
        train_set.count, test_set.count, gpu ? ", device " : "",
        gpu ? gpu->device_name().c_str() : "");
  }
  TimeReport report(options.time_report_skip);
  trainer.on_epoch([&](const EpochStats& s) {
    report.on_epoch();
    if (world.rank == 0) print_epoch(s, options.epochs);
  });
  std::unique_ptr<OrderFile> order_file;
  if (!options.dump_order.empty() && world.rank == 0) {
    order_file = std::make_unique<OrderFile>(options.dump_order);
    trainer.on_epoch_order(
        [&](uint64_t, std::span<const uint32_t> order) { order_file->write(order); });
  }
  std::unique_ptr<LossLog> loss_log;
  if (!options.loss_log.empty() && world.rank == 0) {
    loss_log = std::make_unique<LossLog>(options.loss_log, resumed_at);
  }
  // What an automatic save (the manifest's checkpoint block) keeps of this host: the data position
  // after the step, the seed, the global batch.
  trainer.on_before_step([&](const DataPosition& next) {
    runtime.set_host_state(host_state(next, config.seed, training.train_batch_size));
  });
  trainer.on_step([&](const StepInfo& s) {
    if (options.time_report) report.on_step(s.result);
    if (loss_log) loss_log->write(s.result.global_steps, s.loss);
    // Asynchronous: the step pauses only for the copy of the state, the files are written while
    // training goes on (a save still in progress is waited for first).
    if (options.save_every != 0 && s.result.global_steps % options.save_every == 0) {
      runtime.save(options.save_dir, {}, host_state(s.next, config.seed, training.train_batch_size));
    }
  });
  trainer.run();
  if (!options.save_dir.empty()) runtime.save_wait();  // the last save lands before the exit
  loss_log.reset();
  if (options.time_report) report.print(runtime);

  if (!options.dump_params.empty()) {
    copy_to_model();  // collective: at ZeRO stage 3 the parameters are partitioned
    if (world.rank == 0) write_params(options.dump_params, model);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  options.manifest = default_manifest();
  CLI::App app{"Train an MLP on Fashion-MNIST with the Strata runtime"};
  app.add_option("--epochs", options.epochs, "Passes over the training set")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--manifest", options.manifest, "Strata manifest (JSON)")->capture_default_str();
  app.add_option("--seed", options.seed, "Seed for initialisation and data order")
      ->capture_default_str();
  app.add_option("--batch", options.batch,
                 "Global batch per optimizer step (overrides train_batch_size)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  app.add_option("--data-dir", options.data_dir, "Folder with the gzipped idx files")
      ->capture_default_str();
  app.add_option("--max-steps", options.max_steps, "Stop after this many optimizer steps");
  app.add_option("--dump-params", options.dump_params,
                 "Rank 0 writes the final parameters here as raw floats");
  app.add_option("--dump-initial-params", options.dump_initial_params,
                 "Rank 0 writes the parameters right after finalize (rank 0's initial values, "
                 "as every rank starts) here, in --dump-params' layout");
  app.add_option("--dump-order", options.dump_order,
                 "Rank 0 writes each epoch's training-set permutation here as raw uint32, epoch "
                 "after epoch (the file is truncated first)");
  app.add_option("--overrides", options.overrides,
                 "JSON merge patch over the manifest (RFC 7386), e.g. '{\"fp16\": {\"enabled\": "
                 "true}}'; --batch is applied over it");
  app.add_option("--hidden", options.hidden, "Hidden layer widths")
      ->delimiter(',')
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20))
      ->capture_default_str();
  auto* save_dir = app.add_option("--save-dir", options.save_dir,
                                  "Checkpoint folder (DIR/TAG, DIR/latest); with --save-every");
  app.add_option("--save-every", options.save_every,
                 "Save a checkpoint (tag global_step<N>, asynchronously) every N optimizer steps")
      ->check(CLI::Range(uint64_t{1}, ~uint64_t{0}))
      ->needs(save_dir);
  app.add_option("--resume", options.resume,
                 "Continue from a checkpoint: DIR (its latest) or DIR/TAG; --max-steps counts "
                 "the checkpoint's steps too");
  app.add_option("--resume-if-present", options.resume_if_present,
                 "Resume from DIR's latest checkpoint when it has one (a restarted job), else "
                 "start fresh; e.g. $STRATA_CHECKPOINT_DIR under strata-run --max-restarts")
      ->excludes("--resume");
  app.add_option("--loss-log", options.loss_log,
                 "Rank 0 writes 'global_step loss' per optimizer step (mean over the global "
                 "batch, %.9e)");
  app.add_flag("--time-report", options.time_report,
               "At the end, rank 0 prints one line 'step_time steps=N wall=... host=...' of "
               "seconds per optimizer step, the mean over ranks (for bench/step_overhead)");
  app.add_option("--time-report-skip", options.time_report_skip,
                 "Warm-up steps --time-report leaves out")
      ->capture_default_str();
  app.add_option("--device", options.device,
                 "Where forward and backward run: cpu (CBLAS) or cuda (cuBLAS; parameters and "
                 "gradients in device memory, one device per local rank)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_flag("--share-device", options.share_device,
               "With --device cuda: let local ranks share devices (local rank modulo the visible "
               "devices) instead of refusing more ranks than devices on a node");
  CLI11_PARSE(app, argc, argv);
  if (options.device == "cuda" && !built_with_cuda()) {  // before any data is read or rank talks
    std::fprintf(stderr, "error: %s\n", kBuiltWithoutCuda);
    return 1;
  }

  try {
    return train(options);
  } catch (const std::exception& e) {  // strata::Error included: its message says it all
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
