// Mixed-precision multi-rank test host. Trains SyntheticModel (f16 or bf16, odd sizes) through
// the runtime at any ZeRO stage and can plant a non-finite gradient on one chosen rank at chosen
// steps. After every optimizer step each rank checks, and fails on its own if not:
//  - the outcome: SKIPPED exactly at the planted steps (whichever rank planted), else APPLIED;
//  - the counters: global_steps = step, skipped_steps = planted steps so far;
//  - the loss scale: DeepSpeed's trajectory (tools/strata-plugin-check/precision/deepspeed_loss_scaler.hpp) for fp16, 1 for bf16;
//  - agreement: outcome, counters, scale and a hash of every parameter's bits are allgathered and
//    must be equal on every rank;
//  - parameters unchanged by a skipped step and changed by an applied one;
//  - gradients read zero at the start of every step (zeroed after skipped boundaries too).
// With --expect-stop the run must end, on every rank, with the runtime's "cannot decrease scale
// anymore" error at exactly the step DeepSpeed's rules stop at; the host then exits 0.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "precision/deepspeed_loss_scaler.hpp"
#include "synthetic_model.hpp"

namespace strata::mixedtest {
namespace {

struct Options {
  std::string manifest;
  std::string precision;         // fp16 or bf16
  int stage = -1;                // -1: the manifest's
  uint64_t accumulation = 1;
  uint64_t steps = 12;
  uint64_t seed = 3;
  int inject_rank = -1;          // -1: nobody plants
  std::vector<uint64_t> inject_steps;
  uint64_t inject_from = 0;      // 0: off; else every step from this one on
  std::string inject_value = "inf";
  plugin_check::ScalerSettings scaler;
  bool expect_stop = false;
};

constexpr const char* kStopMessage = "cannot decrease scale anymore";

std::string overrides(const Options& o) {
  nlohmann::json patch = {{"gradient_accumulation_steps", o.accumulation}};
  if (o.stage >= 0) patch["zero_optimization"] = {{"stage", o.stage}};
  if (o.precision == "fp16") {
    patch["fp16"] = {{"enabled", true},
                     {"loss_scale", 0},
                     {"initial_scale_power", o.scaler.initial_scale_power},
                     {"loss_scale_window", o.scaler.window},
                     {"hysteresis", o.scaler.hysteresis},
                     {"consecutive_hysteresis", o.scaler.consecutive_hysteresis},
                     {"min_loss_scale", o.scaler.min_loss_scale}};
  } else {
    patch["bf16"] = {{"enabled", true}};
  }
  return patch.dump();
}

float poison_value(const std::string& name) {
  if (name == "inf") return std::numeric_limits<float>::infinity();
  if (name == "-inf") return -std::numeric_limits<float>::infinity();
  if (name == "nan") return std::numeric_limits<float>::quiet_NaN();
  throw std::invalid_argument("--inject-value: expected inf, -inf or nan, got '" + name + "'");
}

int64_t bits_of(double d) {
  int64_t i;
  std::memcpy(&i, &d, sizeof i);
  return i;
}

std::string at_step(uint64_t step) { return "step " + std::to_string(step) + ": "; }

// Every rank's [outcome, skipped, global, scale bits, hash] must equal rank 0's.
void check_agreement(Runtime& runtime, const StepResult& r, uint64_t hash, uint64_t step) {
  constexpr int kFields = 5;
  static const char* const kNames[kFields] = {"outcome", "skipped_steps", "global_steps",
                                              "loss_scale", "parameter hash"};
  const int64_t mine[kFields] = {int64_t(r.outcome), int64_t(r.skipped_steps),
                                 int64_t(r.global_steps), bits_of(r.loss_scale), int64_t(hash)};
  const int ranks = runtime.world().size;
  std::vector<int64_t> all(std::size_t(ranks) * kFields);
  runtime.allgather(mine, all.data(), kFields);
  for (int rank = 1; rank < ranks; ++rank) {
    for (int f = 0; f < kFields; ++f) {
      if (all[std::size_t(rank * kFields + f)] != all[std::size_t(f)]) {
        throw std::runtime_error(at_step(step) + kNames[f] + " differs across ranks: rank " +
                                 std::to_string(rank) + " has " +
                                 std::to_string(all[std::size_t(rank * kFields + f)]) +
                                 ", rank 0 has " + std::to_string(all[std::size_t(f)]));
      }
    }
  }
}

void expect(bool ok, uint64_t step, const std::string& what) {
  if (!ok) throw std::runtime_error(at_step(step) + what);
}

int run(const Options& o) {
  Runtime runtime(o.manifest, overrides(o));
  const WorldInfo world = runtime.world();
  if (o.inject_rank >= world.size) {
    throw std::invalid_argument("--inject-rank " + std::to_string(o.inject_rank) + ": only " +
                                std::to_string(world.size) + " ranks");
  }
  SyntheticModel model(runtime, o.seed);
  const bool fp16 = model.dtype() == STRATA_F16;
  if (fp16 != (o.precision == "fp16")) throw std::logic_error("model dtype != --precision");
  const std::set<uint64_t> planted(o.inject_steps.begin(), o.inject_steps.end());
  auto overflows_at = [&](uint64_t step) {
    return o.inject_rank >= 0 && (planted.count(step) > 0 || (o.inject_from > 0 && step >= o.inject_from));
  };
  const Poison poison{"w1", poison_value(o.inject_value)};

  plugin_check::DeepSpeedLossScaler reference(o.scaler);
  uint64_t previous_hash = model.hash();
  check_agreement(runtime, StepResult{}, previous_hash, 0);  // finalize broadcast rank 0's values
  uint64_t skips = 0;
  std::string trajectory;
  for (uint64_t step = 1; step <= o.steps; ++step) {
    const bool overflow = overflows_at(step);
    const bool stops = fp16 && overflow && reference.overflow_stops_run();
    const double want_scale = fp16 ? reference.scale() : 1.0;
    StepResult r;
    for (uint64_t micro = 0; micro < o.accumulation; ++micro) {
      const double scale = runtime.loss_scale();
      expect(scale == want_scale, step, "loss scale " + std::to_string(scale) + ", expected " +
                                            std::to_string(want_scale));
      const bool plant = overflow && world.rank == o.inject_rank && micro + 1 == o.accumulation;
      model.backward(step, micro, scale / double(o.accumulation),
                     plant ? std::optional<Poison>(poison) : std::nullopt, micro == 0);
      if (micro + 1 == o.accumulation) break;
      r = runtime.step();
      expect(r.outcome == STRATA_STEP_ACCUMULATED, step, "a micro-step before the boundary was " +
                                                         std::to_string(int(r.outcome)));
    }
    try {
      r = runtime.step();
    } catch (const Error& e) {
      if (!stops || std::strstr(e.what(), kStopMessage) == nullptr) throw;
      std::printf("rank %d: stopped at step %llu as DeepSpeed does (scale %g = min_loss_scale): "
                  "%.160s\n", world.rank, static_cast<unsigned long long>(step), want_scale,
                  e.what());
      return 0;
    }
    expect(!stops, step, "overflow with the scale at min_loss_scale " + std::to_string(want_scale) +
                             " should have stopped the run ('" + kStopMessage + "')");
    if (fp16) reference.update(overflow);
    skips += overflow ? 1 : 0;
    expect(r.outcome == (overflow ? STRATA_STEP_SKIPPED : STRATA_STEP_APPLIED), step,
           std::string("outcome ") + std::to_string(int(r.outcome)) + ", expected " +
               (overflow ? "SKIPPED (2)" : "APPLIED (1)"));
    expect(r.global_steps == step, step, "global_steps " + std::to_string(r.global_steps));
    expect(r.skipped_steps == skips, step, "skipped_steps " + std::to_string(r.skipped_steps) +
                                               ", expected " + std::to_string(skips));
    const double next_scale = fp16 ? reference.scale() : 1.0;
    expect(r.loss_scale == next_scale, step, "loss scale after the step " +
                                                 std::to_string(r.loss_scale) + ", DeepSpeed's " +
                                                 "rules give " + std::to_string(next_scale));
    const uint64_t hash = model.hash();
    check_agreement(runtime, r, hash, step);
    expect((hash == previous_hash) == overflow, step,
           overflow ? "a skipped step changed the parameters" : "an applied step left every "
                                                                "parameter unchanged");
    previous_hash = hash;
    trajectory += (trajectory.empty() ? "" : " ") + std::to_string(step) + (overflow ? "S" : "") +
                  ":" + std::to_string(static_cast<long long>(r.loss_scale));
  }
  if (o.expect_stop) throw std::runtime_error("ran all steps without stopping at min_loss_scale");
  if (!model.finite()) throw std::runtime_error("a parameter is not finite after training");
  if (world.rank == 0) {
    std::printf("mixed_host: %s, %d ranks, %zu parameters, %llu steps x %llu micro-batches, "
                "%llu skipped, parameters bitwise identical on every rank after each step; "
                "scale after each step (S = skipped): %s\n",
                o.precision.c_str(), world.size, model.parameters(),
                static_cast<unsigned long long>(o.steps),
                static_cast<unsigned long long>(o.accumulation),
                static_cast<unsigned long long>(skips), trajectory.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace strata::mixedtest

int main(int argc, char** argv) {
  strata::mixedtest::Options o;
  CLI::App app{"Strata mixed-precision multi-rank test host"};
  app.add_option("--manifest", o.manifest, "Strata manifest")->required();
  app.add_option("--precision", o.precision, "fp16 or bf16")
      ->required()
      ->check(CLI::IsMember({"fp16", "bf16"}));
  app.add_option("--stage", o.stage, "zero_optimization.stage (default: the manifest's)");
  app.add_option("--accumulation", o.accumulation, "gradient_accumulation_steps")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--steps", o.steps, "Optimizer steps")->capture_default_str();
  app.add_option("--seed", o.seed, "Seed for init and targets")->capture_default_str();
  app.add_option("--inject-rank", o.inject_rank, "Rank that plants non-finite gradients");
  app.add_option("--inject-steps", o.inject_steps, "Steps (1-based) it plants at")->delimiter(',');
  app.add_option("--inject-from", o.inject_from, "Plant at every step from this one on");
  app.add_option("--inject-value", o.inject_value, "inf, -inf or nan")->capture_default_str();
  app.add_option("--initial-scale-power", o.scaler.initial_scale_power)->capture_default_str();
  app.add_option("--window", o.scaler.window, "loss_scale_window")->capture_default_str();
  app.add_option("--hysteresis", o.scaler.hysteresis)->capture_default_str();
  app.add_flag("--consecutive-hysteresis", o.scaler.consecutive_hysteresis);
  app.add_option("--min-loss-scale", o.scaler.min_loss_scale)->capture_default_str();
  app.add_flag("--expect-stop", o.expect_stop,
               "The run must stop with 'cannot decrease scale anymore' where DeepSpeed would");
  CLI11_PARSE(app, argc, argv);
  try {
    return strata::mixedtest::run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
