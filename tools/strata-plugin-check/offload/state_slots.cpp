// state_slots.<name> (ABI 1.6 checkpoints): after 40 steps, state_slots names PyTorch's state
// (Adam exp_avg and exp_avg_sq, SGD with momentum momentum_buffer, Lion exp_avg, plain SGD none)
// and read_state, range by range, gives the reference's state. A fresh instance whose masters and
// state (write_state) are the reference's then steps on from step 41 exactly like the reference:
// parameters after every step, state again after step 80.
//
// State tolerance: |got - expected| <= 5e-5 * max(|expected|, rms of the slot): relative, with a
// floor for elements that pass near zero (SGD's buffer changes sign).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "offload/offload_checks.hpp"

namespace strata::plugin_check {
namespace {

constexpr uint64_t kCut = 40;  // steps before the state is read (and the checkpoint "taken")
constexpr double kStateTolerance = 5e-5;

std::vector<std::string> plugin_slot_names(const Instance<strata_offload_ops>& plugin) {
  strata_state_slots slots{};
  slots.struct_size = sizeof(slots);
  strata_error err = sdk::make_error();
  expect_ok(plugin.ops().state_slots(plugin.self(), &slots, &err), err, "state_slots()");
  std::vector<std::string> names;
  for (uint32_t i = 0; i < slots.count; ++i) names.emplace_back(slots.names[i]);
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text = "[";
  for (const std::string& n : names) text += (text.size() > 1 ? ", " : "") + n;
  return text + "]";
}

// Reads or writes slot `slot` of every shard in two ranges (the halves), through `io`.
void transfer(const Instance<strata_offload_ops>& plugin, ShardSet& shards, uint32_t slot,
              std::vector<float>& flat, bool write) {
  size_t base = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    const uint64_t n = shards.master(s).size(), half = n / 2;
    for (const auto& [first, count] : {std::pair<uint64_t, uint64_t>{0, half}, {half, n - half}}) {
      if (count == 0) continue;
      strata_state_io_args io{};
      io.struct_size = sizeof(io);
      io.shard = static_cast<uint32_t>(s);
      io.slot = slot;
      io.first = first;
      io.count = count;
      io.data = flat.data() + base + first;
      strata_error err = sdk::make_error();
      const auto fn = write ? plugin.ops().write_state : plugin.ops().read_state;
      expect_ok(fn(plugin.self(), &io, &err), err,
                std::string(write ? "write_state" : "read_state") + " (shard " + std::to_string(s) +
                    ", slot " + std::to_string(slot) + ", first " + std::to_string(first) + ")");
    }
    base += n;
  }
}

// The plugin's state against the reference's, slot by slot (by name).
std::string compare_state(const Instance<strata_offload_ops>& plugin, ShardSet& shards,
                          ReferenceOptimizer& ref, uint64_t t) {
  const std::vector<std::string> names = plugin_slot_names(plugin), want = ref.slot_names();
  for (uint32_t slot = 0; slot < names.size(); ++slot) {
    const size_t r =
        static_cast<size_t>(std::find(want.begin(), want.end(), names[slot]) - want.begin());
    std::vector<float> got(shards.elements());
    transfer(plugin, shards, slot, got, false);
    const std::vector<double>& expected = ref.slot(r);
    double rms = 0;
    for (double x : expected) rms += x * x;
    rms = std::sqrt(rms / static_cast<double>(expected.size()));
    for (size_t i = 0; i < got.size(); ++i) {
      if (!(std::abs(got[i] - expected[i]) <=
            kStateTolerance * std::max(std::abs(expected[i]), rms))) {
        return names[slot] + " after " + where(shards, t, i) + ": expected " +
               number_text(expected[i]) + ", got " + number_text(got[i]);
      }
    }
  }
  return {};
}

}  // namespace

Verdict state_slots(const Target& target, const OptimizerCase& c) {
  const strata_offload_ops& ops = target.ops<strata_offload_ops>();
  const bool in_table = STRATA_OPS_HAS(&ops, strata_offload_ops, write_state);
  const int present = in_table ? (ops.state_slots != nullptr) + (ops.read_state != nullptr) +
                                     (ops.write_state != nullptr)
                               : 0;
  if (present == 0)
    return Verdict::skip("no state_slots/read_state/write_state (ABI 1.6 checkpoints)");
  if (present != 3)
    return Verdict::fail("state_slots, read_state and write_state: only some are set");

  Instance<strata_offload_ops> before(target, config_for(target, c));
  if (!before.ok()) return Verdict::fail(before.refusal());
  ShardSet shards;
  Lockstep run(before, shards, c.hyper, reads_v16(before));
  run.init_state();
  for (uint64_t t = 1; t <= kCut; ++t) {
    if (std::string diff = run.step(t); !diff.empty()) return Verdict::fail("parameters: " + diff);
  }
  std::vector<std::string> names = plugin_slot_names(before), want = run.reference().slot_names();
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  std::sort(want.begin(), want.end());
  if (sorted != want) {
    return Verdict::fail("state_slots: expected " + joined(want) + ", got " + joined(names));
  }
  if (std::string diff = compare_state(before, shards, run.reference(), kCut); !diff.empty()) {
    return Verdict::fail("read_state: " + diff);
  }

  // The checkpoint, as fp32: the resumed reference starts from exactly what the plugin gets.
  Instance<strata_offload_ops> after(target, config_for(target, c));
  if (!after.ok()) return Verdict::fail(after.refusal());
  ShardSet resumed;
  std::vector<double>& saved = run.reference().params();
  size_t flat = 0;
  for (size_t s = 0; s < resumed.size(); ++s) {
    for (float& x : resumed.master(s)) x = static_cast<float>(saved[flat++]);
  }
  Lockstep rerun(after, resumed, c.hyper, reads_v16(after));
  rerun.init_state();
  rerun.reference().state_loaded();
  const std::vector<std::string> order = run.reference().slot_names();
  for (uint32_t slot = 0; slot < names.size(); ++slot) {
    const size_t r =
        static_cast<size_t>(std::find(order.begin(), order.end(), names[slot]) - order.begin());
    std::vector<float> state(run.reference().slot(r).begin(), run.reference().slot(r).end());
    rerun.reference().slot(r).assign(state.begin(), state.end());
    transfer(after, resumed, slot, state, true);
  }
  for (uint64_t t = kCut + 1; t <= 2 * kCut; ++t) {
    if (std::string diff = rerun.step(t); !diff.empty()) {
      return Verdict::fail("after write_state, parameters: " + diff);
    }
  }
  if (std::string diff = compare_state(after, resumed, rerun.reference(), 2 * kCut);
      !diff.empty()) {
    return Verdict::fail("after write_state, read_state: " + diff);
  }
  return Verdict::pass(joined(names));
}

}  // namespace strata::plugin_check
