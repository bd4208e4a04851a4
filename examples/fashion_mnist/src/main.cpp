// fashion_mnist — trains a 784-256-128-10 MLP on Fashion-MNIST, data-parallel through Strata.
//
//   mpirun -np 4 fashion_mnist --epochs 10 [--manifest FILE] [--batch N] [--data-dir DIR]
//
// The manifest decides how ranks communicate, shard, round and step; this program only does
// forward and backward. Swapping strategies is an edit of the manifest, not a rebuild.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <strata/strata.hpp>
#include <string>

#include "dataset.hpp"
#include "mlp.hpp"
#include "param_file.hpp"
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
};

// An installed binary finds its manifests in ../share/strata/manifests; a build-tree binary in
// the source tree it was built from.
std::string default_manifest() {
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
std::string overrides(const Options& options) {
  if (options.batch == 0) return {};
  nlohmann::json patch = {{"train_batch_size", options.batch},
                          {"train_micro_batch_size_per_gpu", nullptr}};
  return patch.dump();
}

void print_epoch(const EpochStats& s, int epochs) {
  std::printf(
      "epoch %d/%d  step %llu  train_loss %.4f  test_acc %.4f  grad_norm %.3f  "
      "samples/s %.0f  time %.2fs%s\n",
      s.epoch, epochs, static_cast<unsigned long long>(s.global_steps), s.train_loss,
      s.test_accuracy, s.grad_norm, s.samples_per_second, s.seconds,
      s.stopped_early ? "  (stopped: --max-steps)" : "");
  std::fflush(stdout);
}

int train(const Options& options) {
  // Data first: a missing file fails before any rank starts talking to the others.
  const Dataset train_set = load_fashion_mnist(options.data_dir, Split::train);
  const Dataset test_set = load_fashion_mnist(options.data_dir, Split::test);

  strata::Runtime runtime(options.manifest, overrides(options));
  const auto world = runtime.world();
  const auto training = runtime.training();

  Mlp model({train_set.features, 256, 128, train_set.classes});
  model.init(options.seed);  // the same on every rank; finalize broadcasts rank 0's anyway
  RuntimeLayers layers(runtime, model);

  Trainer trainer(runtime, model, train_set, &test_set,
                  {options.epochs, options.seed, options.max_steps});
  if (world.rank == 0) {
    std::printf(
        "fashion_mnist: %d ranks, global batch %llu = micro %llu x accumulation %llu x %d "
        "ranks, %zu train / %zu test samples\n",
        world.size, static_cast<unsigned long long>(training.train_batch_size),
        static_cast<unsigned long long>(training.micro_batch_size),
        static_cast<unsigned long long>(training.gradient_accumulation_steps), world.size,
        train_set.count, test_set.count);
    trainer.on_epoch([&](const EpochStats& s) { print_epoch(s, options.epochs); });
  }
  trainer.run();

  if (!options.dump_params.empty()) {
    layers.copy_to_model();  // collective: at ZeRO stage 3 the parameters are partitioned
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
  CLI11_PARSE(app, argc, argv);

  try {
    return train(options);
  } catch (const std::exception& e) {  // strata::Error included: its message says it all
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
