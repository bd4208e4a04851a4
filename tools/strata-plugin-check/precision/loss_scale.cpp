// loss_scale.*: scripted overflow sequences driven through create → loss_scale → update, the
// scale after every update compared with DeepSpeed's DynamicLossScaler.update_scale as
// deepspeed_loss_scaler.hpp restates it. An overflow where DeepSpeed raises "cannot decrease scale
// anymore" must give STRATA_ERR_NUMERIC. A static scale (fp16.loss_scale > 0) never changes and
// never raises.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "precision/deepspeed_loss_scaler.hpp"
#include "precision/instance.hpp"
#include "precision/precision_checks.hpp"

namespace strata::plugin_check {
namespace {

using nlohmann::json;

struct Scenario {
  std::string name;
  json fp16;  // the fp16 block beyond "enabled" (empty: DeepSpeed's defaults)
  ScalerSettings settings;
  std::string steps;  // 'O' an overflow, '.' a clean step; one update each
};

json block(const ScalerSettings& s) {
  return {{"loss_scale", 0},
          {"initial_scale_power", s.initial_scale_power},
          {"loss_scale_window", s.window},
          {"hysteresis", s.hysteresis},
          {"consecutive_hysteresis", s.consecutive_hysteresis},
          {"min_loss_scale", s.min_loss_scale}};
}

Scenario scripted(std::string name, const ScalerSettings& s, std::string steps) {
  return {std::move(name), block(s), s, std::move(steps)};
}

// A long pseudo-random sequence (overflows with probability p), steered off the minimum so that it
// runs to the end: where the next overflow would raise, the step is clean instead.
Scenario random_walk(std::string name, const ScalerSettings& s, double p, uint32_t seed) {
  constexpr size_t length = 3000;
  std::mt19937 rng(seed);
  std::bernoulli_distribution overflow(p);
  DeepSpeedLossScaler reference(s);
  std::string steps;
  for (size_t i = 0; i < length; ++i) {
    const bool o = overflow(rng) && !reference.overflow_stops_run();
    steps += o ? 'O' : '.';
    reference.update(o);
  }
  return scripted(std::move(name), s, std::move(steps));
}

ScalerSettings settings(int power, int64_t window, int64_t hysteresis, bool consecutive = false,
                        double min_scale = 1.0) {
  return {power, window, hysteresis, consecutive, min_scale};
}

std::vector<Scenario> scenarios() {
  std::vector<Scenario> all;
  // DeepSpeed's defaults (2^16, window 1000, hysteresis 2, min 1), the block left empty: the
  // scale doubles on update 1001, then the hysteresis absorbs one overflow.
  all.push_back({"defaults", json::object(), ScalerSettings{},
                 std::string(1001, '.') + "OO" + std::string(20, '.') + "OOO"});
  all.push_back(scripted("growth", settings(2, 3, 1), "......."));
  all.push_back(scripted("overflow_restarts_window", settings(3, 2, 1), "..O....."));
  all.push_back(scripted("hysteresis", settings(10, 2, 3), "O.O.OO....OOO"));
  all.push_back(scripted("hysteresis_refilled_by_window", settings(4, 2, 2), "OO...OO"));
  all.push_back(scripted("consecutive_hysteresis", settings(10, 2, 3, true), "O.O.OOO..O.OO"));
  all.push_back(scripted("consecutive_hysteresis_window", settings(2, 2, 2, true), "O...OO"));
  // Halving clamps to min_loss_scale; an overflow at the minimum is STRATA_ERR_NUMERIC.
  all.push_back(scripted("min_loss_scale.clamp", settings(3, 1000, 1, false, 3.0), "OOO"));
  all.push_back(scripted("min_loss_scale.through_hysteresis", settings(1, 1000, 2), "OOO"));
  all.push_back(scripted("min_loss_scale.recovers_then_stops", settings(1, 1, 1), "O..OO"));
  all.push_back(random_walk("random.hysteresis", settings(12, 5, 3), 0.3, 17u));
  all.push_back(random_walk("random.consecutive_hysteresis", settings(12, 5, 3, true), 0.55, 29u));
  all.push_back(random_walk("random.no_hysteresis", settings(8, 4, 1, false, 0.25), 0.15, 41u));
  return all;
}

// "updates 961-1001 '....O'": the end of the sequence up to and including update n (1-based).
std::string sequence_so_far(const std::string& steps, size_t n) {
  constexpr size_t kShown = 40;
  const size_t first = n > kShown ? n - kShown : 0;
  return "updates " + std::to_string(first + 1) + "-" + std::to_string(n) + " '" +
         steps.substr(first, n - first) + "'";
}

Verdict run_dynamic(const Target& target, const Scenario& sc) {
  json fp16 = sc.fp16;
  fp16["enabled"] = true;
  const std::string config =
      scenario_config(target, {{"fp16", fp16}, {"bf16", {{"enabled", false}}}});
  Instance<strata_precision_ops> amp(target, config);
  if (!amp.ok()) return Verdict::skip("fp16 dynamic loss scaling not claimed: " + amp.refusal());
  const strata_precision_caps caps = caps_of(amp);
  if (caps.dynamic_scaling != 1) {
    return Verdict::skip("caps.dynamic_scaling " + std::to_string(caps.dynamic_scaling) + " for " +
                         config);
  }
  DeepSpeedLossScaler reference(sc.settings);
  if (const double got = scale_of(amp); got != reference.scale()) {
    return Verdict::fail("before the first update (" + config + "): expected scale " +
                         number_text(reference.scale()) + ", got " + number_text(got));
  }
  double lowest = reference.scale(), highest = reference.scale();
  for (size_t i = 0; i < sc.steps.size(); ++i) {
    const bool overflow = sc.steps[i] == 'O';
    const bool raises = overflow && reference.overflow_stops_run();
    strata_error err = sdk::make_error();
    const strata_status status = amp.ops().update(amp.self(), overflow ? 1 : 0, &err);
    const std::string where = "update " + std::to_string(i + 1) + " (" +
                              (overflow ? "overflow" : "clean") + "; " +
                              sequence_so_far(sc.steps, i + 1) + ")";
    if (raises) {
      if (status == STRATA_ERR_NUMERIC) return Verdict::pass();
      return Verdict::fail(where + ": expected STRATA_ERR_NUMERIC (overflow at min_loss_scale " +
                           number_text(reference.scale()) + "), got " + status_name(status) +
                           " and scale " + number_text(scale_of(amp)));
    }
    if (status != STRATA_OK) {
      return Verdict::fail(where + ": expected OK, got " + status_name(status) + ": " +
                           err.message);
    }
    reference.update(overflow);
    if (const double got = scale_of(amp); got != reference.scale()) {
      return Verdict::fail(where + ": expected scale " + number_text(reference.scale()) + ", got " +
                           number_text(got) + " (" + config + ")");
    }
    lowest = std::min(lowest, reference.scale());
    highest = std::max(highest, reference.scale());
  }
  return Verdict::pass(std::to_string(sc.steps.size()) + " updates, scale " + number_text(lowest) +
                       " to " + number_text(highest));
}

// fp16.loss_scale > 0: that scale, whatever overflows, never an error.
Verdict run_static(const Target& target) {
  const json fp16 = {{"enabled", true}, {"loss_scale", 128}};
  const std::string config =
      scenario_config(target, {{"fp16", fp16}, {"bf16", {{"enabled", false}}}});
  Instance<strata_precision_ops> amp(target, config);
  if (!amp.ok()) return Verdict::skip("fp16 static loss scale not claimed: " + amp.refusal());
  if (const int32_t d = caps_of(amp).dynamic_scaling; d != 0) {
    return Verdict::fail("caps.dynamic_scaling: expected 0 for a static scale, got " +
                         std::to_string(d));
  }
  const std::string steps = "OOO..OOOO" + std::string(40, '.') + "OO";
  for (size_t i = 0; i <= steps.size(); ++i) {
    const double got = scale_of(amp);
    if (got != 128.0) {
      return Verdict::fail(
          (i == 0 ? std::string("before the first update")
                  : "after update " + std::to_string(i) + " (" + sequence_so_far(steps, i) + ")") +
          ": expected scale 128, got " + number_text(got));
    }
    if (i == steps.size()) break;
    strata_error err = sdk::make_error();
    expect_ok(amp.ops().update(amp.self(), steps[i] == 'O' ? 1 : 0, &err), err,
              "update " + std::to_string(i + 1) + " (" + sequence_so_far(steps, i + 1) + ")");
  }
  return Verdict::pass();
}

}  // namespace

void check_loss_scale(const Target& target, Recorder& recorder) {
  for (const Scenario& sc : scenarios()) {
    recorder.run("loss_scale." + sc.name, [&] { return run_dynamic(target, sc); });
  }
  recorder.run("loss_scale.static", [&] { return run_static(target); });
}

}  // namespace strata::plugin_check
