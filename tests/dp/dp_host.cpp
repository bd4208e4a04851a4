// Data-parallel test host: trains the Fashion-MNIST example's MLP on deterministic synthetic data
// through the Strata runtime and, after EVERY optimizer step, checks that all ranks hold bitwise
// identical parameters (a 64-bit hash of the parameter bytes, allgathered). Rank 0 writes the
// final parameters so a driver can compare runs with different world sizes.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <strata/strata.hpp>
#include <string>
#include <vector>

#include "dataset.hpp"
#include "mlp.hpp"
#include "param_file.hpp"
#include "trainer.hpp"

using namespace strata::fmnist;

namespace {

struct Options {
  std::string manifest;
  uint64_t batch = 32;
  uint64_t accumulation = 1;
  uint64_t steps = 50;
  uint64_t samples = 1024;
  uint64_t seed = 7;
  bool skew_init = false;   // rank r initialises with seed + r: finalize must still agree them
  uint64_t corrupt_at = 0;  // perturb rank 1's params after this step (checks the checker)
  std::string dump;
};

// FNV-1a over the raw bytes: any bit that differs changes the hash (with overwhelming odds).
uint64_t hash_params(const Mlp& model) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const Param& p : model.params()) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(p.data.data());
    for (std::size_t i = 0; i < p.data.size() * sizeof(float); ++i) {
      h = (h ^ bytes[i]) * 0x100000001b3ull;
    }
  }
  return h;
}

void check_identical(strata::Runtime& runtime, const Mlp& model, uint64_t step, int world_size) {
  const auto mine = static_cast<int64_t>(hash_params(model));
  std::vector<int64_t> all(static_cast<std::size_t>(world_size));
  runtime.allgather(&mine, all.data(), 1);
  for (int r = 1; r < world_size; ++r) {
    if (all[std::size_t(r)] != all[0]) {
      char message[160];
      std::snprintf(message, sizeof message,
                    "parameters differ across ranks after step %llu: rank %d hash %016llx, "
                    "rank 0 hash %016llx",
                    static_cast<unsigned long long>(step), r,
                    static_cast<unsigned long long>(all[std::size_t(r)]),
                    static_cast<unsigned long long>(all[0]));
      throw std::runtime_error(message);
    }
  }
}

int run(const Options& o) {
  const nlohmann::json overrides = {{"train_batch_size", o.batch},
                                    {"gradient_accumulation_steps", o.accumulation},
                                    {"train_micro_batch_size_per_gpu", nullptr}};
  strata::Runtime runtime(o.manifest, overrides.dump());
  const auto world = runtime.world();

  const Dataset data = make_synthetic(o.samples, 784, 10, o.seed);
  Mlp model({784, 256, 128, 10});
  model.init(o.skew_init ? o.seed + uint64_t(world.rank) : o.seed);
  auto indices = attach(runtime, model);
  check_identical(runtime, model, 0, world.size);  // finalize broadcast rank 0's values

  Trainer trainer(runtime, model, std::move(indices), data, nullptr, {1000000, o.seed, o.steps});
  uint64_t checked = 0;
  trainer.on_step([&](const strata::StepResult& r) {
    if (!r.applied()) {
      throw std::runtime_error("step " + std::to_string(r.global_steps) +
                               " was not applied (fp32 gradients should never overflow)");
    }
    if (o.corrupt_at == r.global_steps && world.rank == 1) model.params()[0].data[0] += 1e-3f;
    check_identical(runtime, model, r.global_steps, world.size);
    ++checked;
  });
  trainer.run();
  if (checked != o.steps) {
    throw std::runtime_error("trained " + std::to_string(checked) + " steps, expected " +
                             std::to_string(o.steps));
  }
  if (world.rank == 0) {
    std::printf(
        "dp_host: %d ranks, batch %llu, accumulation %llu: %llu steps, parameters identical "
        "on every rank after each\n",
        world.size, static_cast<unsigned long long>(o.batch),
        static_cast<unsigned long long>(o.accumulation), static_cast<unsigned long long>(checked));
    if (!o.dump.empty()) write_params(o.dump, model);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Strata data-parallel equivalence host"};
  app.add_option("--manifest", o.manifest, "Strata manifest")->required();
  app.add_option("--batch", o.batch, "Global batch (train_batch_size)")->capture_default_str();
  app.add_option("--accumulation", o.accumulation, "gradient_accumulation_steps")
      ->capture_default_str();
  app.add_option("--steps", o.steps, "Optimizer steps")->capture_default_str();
  app.add_option("--samples", o.samples, "Synthetic data set size")->capture_default_str();
  app.add_option("--seed", o.seed, "Seed for data, data order and init")->capture_default_str();
  app.add_flag("--skew-init", o.skew_init, "Initialise every rank differently");
  app.add_option("--corrupt-at", o.corrupt_at, "Perturb rank 1's parameters after this step");
  app.add_option("--dump", o.dump, "Rank 0 writes the final parameters here");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
