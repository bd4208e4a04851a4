// The sharding stratum's conformance checks (issue 17): the plugin under test trains the
// synthetic model through libstrata beside the in-tree comm, precision and offload plugins, and
// its parameters after every step must equal those of the same run with strata_zero at stage 0
// (plain data parallelism), within the tolerance of the project's ZeRO equivalence tests.
// Runs in every rank of a job; every rank runs the same checks and runtime calls in order.
#include "check.hpp"
#include "plugin_host.hpp"
#include "sharding/compare.hpp"
#include "sharding/in_tree_plugins.hpp"
#include "sharding/training_run.hpp"

#include <strata/strata.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>

namespace strata::plugin_check {
namespace sharding {
namespace {

constexpr uint64_t kSteps = 8;
constexpr uint64_t kAccumulation = 3;
// Clipping: the model's gradient norm is about 100, so every step is clipped by ~10x.
constexpr double kClipping = 10.0;

nlohmann::json adam() {
  // eps 1e-6 as the dp tests use; gradients here stay far above it anyway.
  return {{"type", "Adam"}, {"params", {{"lr", 0.005}, {"eps", 1e-6}}}};
}
// SGD for clipping: Adam's update is nearly invariant to the gradient's scale, so a wrong clip
// factor (a norm over shards that miss or repeat elements) would hardly show.
nlohmann::json sgd() { return {{"type", "SGD"}, {"params", {{"lr", 0.1}, {"momentum", 0.9}}}}; }

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

// The target's run against the reference's, step by step: the first step whose outcome, norm
// (when compare_norms) or parameters differ.
Verdict compare_runs(const RunResult& reference, const RunResult& got, bool compare_norms) {
  if (!reference.problem.empty()) {
    throw std::runtime_error("the reference run (strata_zero stage 0) failed: " +
                             reference.problem);
  }
  double largest = 0;
  for (std::size_t s = 0; s < reference.steps.size(); ++s) {
    // A breach seen during step s + 1 (its forward reads the values after step s) comes after
    // step s's comparison and before this step's.
    if (!got.problem.empty() && got.problem_step <= s + 1) return Verdict::fail(got.problem);
    const std::string step = "step " + std::to_string(s + 1) + ": ";
    const StepRecord& want = reference.steps[s];
    const StepRecord& have = got.steps.at(s);
    if (want.outcome != STRATA_STEP_APPLIED) {
      throw std::runtime_error("the reference run (strata_zero stage 0) did not apply " + step);
    }
    if (have.outcome != STRATA_STEP_APPLIED) {
      return Verdict::fail(step + "not applied (outcome " + std::to_string(have.outcome) +
                           "; fp32 gradients are finite)");
    }
    if (compare_norms &&
        !(std::fabs(have.grad_norm - want.grad_norm) <= kTolerance * want.grad_norm)) {
      return Verdict::fail(step + "gradient norm before clipping: expected " +
                           number(want.grad_norm) + ", got " + number(have.grad_norm));
    }
    if (auto diff = first_difference(want.values, have.values)) {
      return Verdict::fail(step + *diff);
    }
    largest = std::max(largest, largest_difference(want.values, have.values));
  }
  char note[96];
  std::snprintf(note, sizeof note, "%zu steps at %d ranks equal stage 0's, largest difference %.2g",
                got.steps.size(), got.world_size, largest);
  return Verdict::pass(note);
}

class ShardingChecks {
 public:
  ShardingChecks(const Target& target, const KeptComm& comm) : target_(target), comm_(comm) {
    libraries_.comm = comm.manifest_library();
    libraries_.precision = in_tree_plugin("strata_amp");
    libraries_.offload = in_tree_plugin("strata_offload");
    libraries_.zero = in_tree_plugin("strata_zero");
  }

  // The plugin created directly (not through the runtime, whose API does not expose the caps)
  // with the config, beside the kept comm instance and an in-tree amp instance, and queried.
  Verdict caps() {
    PluginHost precision_host;
    precision_host.set_comm(&comm_.ops(), comm_.self());
    PluginLibrary amp(libraries_.precision);
    void* precision = nullptr;
    strata_error err{sizeof(strata_error), 0, {}};
    if (amp.create<strata_precision_ops>("{}", precision_host.api(), &precision, &err) !=
        STRATA_OK) {
      throw std::runtime_error("in-tree strata_amp: create failed: " + std::string(err.message));
    }
    const auto& amp_ops = amp.ops<strata_precision_ops>();
    PluginHost host;
    host.set_comm(&comm_.ops(), comm_.self());
    host.set_precision(&amp_ops, precision);
    const auto& ops = target_.ops<strata_sharding_ops>();
    strata_plugin_create_args args{};
    args.struct_size = sizeof(args);
    args.config_json = target_.config_json.c_str();
    args.host = host.api();
    void* self = nullptr;
    Verdict verdict;
    const strata_status created = ops.create(&args, &self, &err);
    if (created == STRATA_ERR_UNSUPPORTED) {
      verdict = Verdict::cannot_run(err.message);
    } else if (created != STRATA_OK) {
      verdict = Verdict::fail("create with config " + target_.config_json + " failed: " +
                              err.message);
    } else {
      strata_sharding_caps caps{};
      caps.struct_size = sizeof(caps);
      caps.stage = caps.shards_replicated = -1;
      if (ops.query(self, &caps, &err) != STRATA_OK) {
        verdict = Verdict::fail(std::string("query failed: ") + err.message);
      } else if (caps.stage < 0 || caps.stage > 3 ||
                 (caps.shards_replicated != 0 && caps.shards_replicated != 1)) {
        verdict = Verdict::fail("query gave stage " + std::to_string(caps.stage) +
                                " and shards_replicated " + std::to_string(caps.shards_replicated) +
                                ", expected 0-3 and 0 or 1");
      } else {
        verdict = Verdict::pass("stage " + std::to_string(caps.stage) +
                                (caps.shards_replicated ? ", shards replicated" : ", partitioned"));
      }
      ops.destroy(self);
    }
    amp_ops.destroy(precision);
    cannot_run_ = verdict.outcome == Outcome::CannotRun;
    return verdict;
  }

  // Whether caps() found that the plugin cannot run on this machine.
  bool cannot_run() const { return cannot_run_; }

  // The plugin under test against strata_zero at stage 0, same settings.
  Verdict against_stage0(RunSpec spec, bool compare_norms) {
    const bool plain = spec.accumulation == 1 && spec.clipping == 0 && !spec.groups;
    if (plain && !plain_reference_) plain_reference_ = reference(spec);
    RunResult own_reference;
    if (!plain) own_reference = reference(spec);
    const RunResult& want = plain ? *plain_reference_ : own_reference;
    spec.sharding_library = target_.path;
    spec.sharding_config = target_.config_json;
    const RunResult got = train(libraries_, spec);
    if (spec.clipping > 0) {
      for (std::size_t s = 0; s < want.steps.size(); ++s) {
        if (!(want.steps[s].grad_norm > spec.clipping)) {  // the check must exercise clipping
          throw std::runtime_error("the reference's step " + std::to_string(s + 1) +
                                   " was not clipped (norm " + number(want.steps[s].grad_norm) +
                                   ")");
        }
      }
    }
    return compare_runs(want, got, compare_norms);
  }

  Verdict groups() {
    const auto& ops = target_.ops<strata_sharding_ops>();
    if (ops.define_group == nullptr || ops.gather == nullptr || ops.release == nullptr ||
        ops.param_view == nullptr || ops.end_micro_step == nullptr) {
      return Verdict::skip("the plugin defines no parameter groups");
    }
    RunSpec spec = plain_spec();
    if (!plain_reference_) plain_reference_ = reference(spec);
    // What forward must read before each step: the initial values, then the reference's.
    std::vector<Values> expected{initial_values()};
    for (const StepRecord& r : plain_reference_->steps) expected.push_back(r.values);
    spec.groups = true;
    spec.expected = &expected;
    spec.sharding_library = target_.path;
    spec.sharding_config = target_.config_json;
    return compare_runs(*plain_reference_, train(libraries_, spec), false);
  }

  static RunSpec plain_spec() {
    RunSpec spec;
    spec.optimizer = adam();
    spec.steps = kSteps;
    return spec;
  }

 private:
  RunResult reference(RunSpec spec) const {
    spec.sharding_library = libraries_.zero;
    spec.sharding_config = R"({"stage": 0})";
    spec.groups = false;
    spec.expected = nullptr;
    return train(libraries_, spec);
  }

  const Target& target_;
  const KeptComm& comm_;
  Libraries libraries_;
  std::optional<RunResult> plain_reference_;  // shared by match_stage0 and the groups check
  bool cannot_run_ = false;
};

}  // namespace
}  // namespace sharding

void check_sharding(const Target& target, Recorder& recorder) {
  using namespace sharding;
  std::unique_ptr<KeptComm> comm;
  std::unique_ptr<ShardingChecks> checks;
  std::string setup_failure;
  try {
    comm = std::make_unique<KeptComm>();
    checks = std::make_unique<ShardingChecks>(target, *comm);
  } catch (const std::exception& e) {
    setup_failure = std::string("cannot set up the in-tree plugins: ") + e.what();
  }
  // Every check fails alike on every rank when the set-up failed.
  auto run = [&](const char* name, auto body) {
    recorder.run(name, [&]() -> Verdict {
      if (!checks) throw std::runtime_error(setup_failure);
      return body();
    });
  };
  run("caps", [&] { return checks->caps(); });
  if (checks && checks->cannot_run()) return;  // nothing to train with
  run("steps.match_stage0",
      [&] { return checks->against_stage0(ShardingChecks::plain_spec(), false); });
  run("steps.accumulation", [&] {
    RunSpec spec = ShardingChecks::plain_spec();
    spec.accumulation = kAccumulation;
    return checks->against_stage0(spec, false);
  });
  run("steps.clipping", [&] {
    RunSpec spec = ShardingChecks::plain_spec();
    spec.optimizer = sgd();
    spec.clipping = kClipping;
    return checks->against_stage0(spec, true);
  });
  run("groups.gather_release", [&] { return checks->groups(); });
  checks.reset();
  comm.reset();  // collective: MPI_Finalize once the last instance is gone
}

}  // namespace strata::plugin_check
