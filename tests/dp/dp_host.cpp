// Data-parallel test host: trains a test model (the Fashion-MNIST example's MLP or the odd-sized
// synthetic model) on deterministic synthetic data through the Strata runtime, with either
// host-owned buffers or groups and views (--binding), at any ZeRO stage (--stage overrides the
// manifest). After EVERY optimizer step it checks that all ranks hold bitwise identical
// parameters (a 64-bit hash, allgathered). Rank 0 can dump the final parameters (--dump) so a
// driver can compare runs with different stages and world sizes.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <strata/strata.hpp>
#include <string>
#include <vector>

#include "batch_plan.hpp"
#include "dataset.hpp"
#include "param_dump.hpp"
#include "runtime_binding.hpp"
#include "test_model.hpp"

namespace strata::dptest {
namespace {

struct Options {
  std::string manifest;
  std::string model = "mlp";
  std::string binding = "host";
  std::optional<int> stage;     // overrides zero_optimization.stage
  std::optional<double> clip;   // overrides gradient_clipping
  uint64_t batch = 32;
  uint64_t accumulation = 1;
  uint64_t steps = 50;
  uint64_t samples = 1024;
  uint64_t seed = 7;
  bool grad_ready = true;   // announce each finished gradient (lets reduction overlap backward)
  bool skew_init = false;   // rank r initialises with seed + r: finalize must still agree them
  uint64_t corrupt_at = 0;  // perturb rank 1's params after this step (checks the checker)
  std::string dump;
  std::string set;          // JSON merged over the manifest last (RFC 7386), e.g. an offload block
};

// FNV-1a over the raw bytes: any bit that differs changes the hash (with overwhelming odds).
uint64_t hash_values(const std::vector<std::vector<float>>& tensors) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& t : tensors) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(t.data());
    for (std::size_t i = 0; i < t.size() * sizeof(float); ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  }
  return h;
}

void check_identical(Runtime& runtime, RuntimeBinding& binding, uint64_t step, int world_size) {
  const auto mine = static_cast<int64_t>(hash_values(binding.snapshot()));
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

nlohmann::json overrides(const Options& o) {
  nlohmann::json j = {{"train_batch_size", o.batch},
                      {"gradient_accumulation_steps", o.accumulation},
                      {"train_micro_batch_size_per_gpu", nullptr}};
  if (o.stage) j["zero_optimization"] = {{"stage", *o.stage}};
  if (o.clip) j["gradient_clipping"] = *o.clip;
  if (!o.set.empty()) j.merge_patch(nlohmann::json::parse(o.set));
  return j;
}

int run(const Options& o) {
  Runtime runtime(o.manifest, overrides(o).dump());
  const WorldInfo world = runtime.world();
  const TrainingInfo training = runtime.training();

  std::unique_ptr<TestModel> model = make_model(o.model);
  const fmnist::Dataset data = fmnist::make_synthetic(o.samples, model->inputs(), model->classes(), o.seed);
  model->init(o.skew_init ? o.seed + uint64_t(world.rank) : o.seed);
  RuntimeBinding binding(runtime, *model, parse_binding(o.binding));
  check_identical(runtime, binding, 0, world.size);  // finalize broadcast rank 0's values

  fmnist::BatchPlan plan(data.count,
                         {training.train_batch_size, training.micro_batch_size,
                          training.gradient_accumulation_steps, world.size, world.rank},
                         o.seed);
  std::vector<float> x(training.micro_batch_size * data.features);
  std::vector<uint8_t> y(training.micro_batch_size);
  auto on_ready = [&](std::size_t p) { runtime.grad_ready(binding.index(p)); };
  double last_loss = 0;
  uint64_t clipped = 0;  // steps whose global norm exceeded gradient_clipping (clipping active)
  for (uint64_t step = 0; step < o.steps; ++step) {
    const std::size_t in_epoch = step % plan.steps_per_epoch();
    if (in_epoch == 0) plan.start_epoch(step / plan.steps_per_epoch());
    StepResult result;
    for (uint64_t micro = 0; micro < training.gradient_accumulation_steps; ++micro) {
      const auto batch = plan.micro_batch(in_epoch, micro);
      fmnist::gather_batch(data, batch.data(), batch.size(), x.data(), y.data());
      const auto multiplier = static_cast<float>(runtime.loss_scale() / double(o.accumulation));
      last_loss = model->train_batch(binding.access(), x.data(), y.data(), batch.size(), multiplier,
                                     o.grad_ready ? on_ready : std::function<void(std::size_t)>{});
      result = runtime.step();
    }
    if (!result.applied()) {
      throw std::runtime_error("step " + std::to_string(step + 1) +
                               " was not applied (fp32 gradients should never overflow)");
    }
    if (training.gradient_clipping > 0 && result.grad_norm > training.gradient_clipping) ++clipped;
    if (o.corrupt_at == result.global_steps && world.rank == 1) binding.perturb(1e-3f);
    check_identical(runtime, binding, result.global_steps, world.size);
  }

  const std::vector<std::vector<float>> final_values = binding.snapshot();  // collective
  if (world.rank == 0) {
    std::printf("dp_host: model %s (%zu parameters), %s binding, %d ranks, batch %llu, "
                "accumulation %llu: %llu steps (%llu clipped at %g), last loss %.4f, parameters "
                "identical on every rank after each\n",
                o.model.c_str(), total_elements(*model), o.binding.c_str(), world.size,
                static_cast<unsigned long long>(o.batch),
                static_cast<unsigned long long>(o.accumulation),
                static_cast<unsigned long long>(o.steps), static_cast<unsigned long long>(clipped),
                training.gradient_clipping, last_loss);
    if (!o.dump.empty()) {
      std::vector<NamedTensor> tensors;
      const std::vector<ParamSpec> specs = model->params();
      for (std::size_t p = 0; p < specs.size(); ++p) tensors.push_back({specs[p].name, final_values[p]});
      write_dump(o.dump, tensors);
    }
  }
  return 0;
}

}  // namespace
}  // namespace strata::dptest

int main(int argc, char** argv) {
  strata::dptest::Options o;
  CLI::App app{"Strata data-parallel equivalence host"};
  app.add_option("--manifest", o.manifest, "Strata manifest")->required();
  app.add_option("--model", o.model, "mlp (the example's) or odd")->capture_default_str();
  app.add_option("--binding", o.binding, "host (host-owned buffers) or groups (views)")
      ->capture_default_str();
  app.add_option("--stage", o.stage, "zero_optimization.stage (default: the manifest's)");
  app.add_option("--clip", o.clip, "gradient_clipping (default: the manifest's)");
  app.add_option("--batch", o.batch, "Global batch (train_batch_size)")->capture_default_str();
  app.add_option("--accumulation", o.accumulation, "gradient_accumulation_steps")
      ->capture_default_str();
  app.add_option("--steps", o.steps, "Optimizer steps")->capture_default_str();
  app.add_option("--samples", o.samples, "Synthetic data set size")->capture_default_str();
  app.add_option("--seed", o.seed, "Seed for data, data order and init")->capture_default_str();
  app.add_flag("!--no-grad-ready", o.grad_ready, "Do not call grad_ready during backward");
  app.add_flag("--skew-init", o.skew_init, "Initialise every rank differently");
  app.add_option("--corrupt-at", o.corrupt_at, "Perturb rank 1's parameters after this step");
  app.add_option("--dump", o.dump, "Rank 0 writes the final parameters here");
  app.add_option("--set", o.set,
                 "JSON merged over the manifest after the flags above, e.g. "
                 R"('{"zero_optimization": {"offload_optimizer": {"device": "cpu"}}}')");
  CLI11_PARSE(app, argc, argv);
  try {
    return strata::dptest::run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
