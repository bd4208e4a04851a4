// check_offload: the offload stratum's conformance checks, in one process against the target's
// strata_offload_ops directly. Each optimizer's DeepSpeed block (plugins/offload/README.md) is
// merged with the user's --config (e.g. where the state lives: offload_optimizer).
//   optimizer.<name>     1,000 steps against the double-precision reference (lockstep.hpp)
//   optimizer.any        at least one of them is claimed
//   model_copy           with caps.writes_model_copy: f16/bf16 copies are the exact casts
//   state_slots.<name>   read_state equals the reference's state; write_state then steps on
//                        like the reference (ABI 1.6, when the three functions exist)
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "offload/offload_checks.hpp"
#include "plugin_instance.hpp"

namespace strata::plugin_check {
namespace {

constexpr uint64_t kSteps = 1000;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Why the plugin does not claim `c` (create refused it, or its caps name another optimizer),
// or empty when it does.
std::string not_claimed(const Instance<strata_offload_ops>& plugin, const OptimizerCase& c) {
  if (!plugin.ok()) return "not claimed (" + plugin.refusal() + ")";
  const strata_offload_caps caps = caps_of(plugin);
  const std::string name = caps.optimizer == nullptr ? "(null)" : caps.optimizer;
  if (lower(name) != c.claimed) {
    return "not claimed (caps.optimizer \"" + name + "\" for " + c.block.dump() + ")";
  }
  if (reads_v16(plugin) && c.hyper.kind == OptimizerKind::sgd && c.hyper.beta1 > 0 &&
      std::isnan(caps.momentum)) {
    return "not claimed (caps.momentum NaN: no momentum buffer for " + c.block.dump() + ")";
  }
  return {};
}

// The ABI 1.6 caps: the configured lr and momentum (NaN for SGD without momentum).
std::string caps_difference(const Instance<strata_offload_ops>& plugin, const OptimizerCase& c) {
  if (!reads_v16(plugin)) return {};
  const strata_offload_caps caps = caps_of(plugin);
  if (caps.lr != c.hyper.lr) {
    return "caps.lr: expected " + number_text(c.hyper.lr) + ", got " + number_text(caps.lr);
  }
  const bool none = c.hyper.kind == OptimizerKind::sgd && c.hyper.beta1 == 0;
  if (none ? !std::isnan(caps.momentum) : caps.momentum != c.hyper.beta1) {
    return "caps.momentum: expected " + (none ? std::string("NaN") : number_text(c.hyper.beta1)) +
           ", got " + number_text(caps.momentum);
  }
  return {};
}

Verdict optimizer(const Target& target, const OptimizerCase& c, std::vector<std::string>& claimed) {
  Instance<strata_offload_ops> plugin(target, config_for(target, c));
  if (std::string why = not_claimed(plugin, c); !why.empty()) return Verdict::skip(why);
  claimed.push_back(c.name);
  if (std::string diff = caps_difference(plugin, c); !diff.empty()) return Verdict::fail(diff);
  ShardSet shards;
  Lockstep run(plugin, shards, c.hyper, reads_v16(plugin));
  run.init_state();
  for (uint64_t t = 1; t <= kSteps; ++t) {
    if (std::string diff = run.step(t); !diff.empty()) {
      return Verdict::fail(diff + " (tolerance 5e-5 x max(|expected|, 1))");
    }
  }
  char worst[64];
  std::snprintf(worst, sizeof worst, "%.1e", run.worst());
  return Verdict::pass(std::to_string(kSteps) + " steps, largest error " + worst +
                       " x max(|expected|, 1)");
}

}  // namespace

std::string config_for(const Target& target, const OptimizerCase& c) {
  return scenario_config(target, {{"optimizer", c.block}});
}

bool reads_v16(const Instance<strata_offload_ops>& plugin) {
  return plugin.ops().header.built_minor >= 6;
}

strata_offload_caps caps_of(const Instance<strata_offload_ops>& plugin) {
  strata_offload_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.writes_model_copy = -1;
  caps.lr = std::nan("");
  caps.momentum = std::nan("");
  strata_error err = sdk::make_error();
  expect_ok(plugin.ops().query(plugin.self(), &caps, &err), err, "query()");
  return caps;
}

void check_offload(const Target& target, Recorder& recorder) {
  const std::vector<OptimizerCase> cases = optimizer_cases();
  std::vector<std::string> configs;
  for (const OptimizerCase& c : cases) configs.push_back(config_for(target, c));
  if (!probe_create<strata_offload_ops>(target, configs, recorder)) return;
  std::vector<std::string> claimed;
  for (const OptimizerCase& c : cases) {
    recorder.run("optimizer." + c.name, [&] { return optimizer(target, c, claimed); });
  }
  if (claimed.empty()) {
    recorder.record("optimizer.any",
                    Verdict::fail("the plugin claims none of adam, adamw, sgd, sgd_momentum, "
                                  "sgd_nesterov, lion (see the skips above)"));
    recorder.record("model_copy", Verdict::skip("no optimizer claimed"));
    for (const OptimizerCase& c : cases) {
      recorder.record("state_slots." + c.name, Verdict::skip("no optimizer claimed"));
    }
    return;
  }
  std::string list;
  for (const std::string& name : claimed) list += (list.empty() ? "" : ", ") + name;
  recorder.record("optimizer.any", Verdict::pass("claims " + list));
  const OptimizerCase* first = nullptr;
  for (const OptimizerCase& c : cases) {
    if (first == nullptr && c.name == claimed.front()) first = &c;
  }
  recorder.run("model_copy", [&] { return model_copy(target, *first); });
  for (const OptimizerCase& c : cases) {
    if (std::find(claimed.begin(), claimed.end(), c.name) == claimed.end()) {
      recorder.record("state_slots." + c.name,
                      Verdict::skip("optimizer " + c.name + " not claimed"));
      continue;
    }
    recorder.run("state_slots." + c.name, [&] { return state_slots(target, c); });
  }
}

}  // namespace strata::plugin_check
