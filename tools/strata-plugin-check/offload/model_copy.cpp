// model_copy: with caps.writes_model_copy, a step writes each shard's f16/bf16 model copy (ABI
// 1.2 strata_shard.model) in the same pass; every element must be the exact round-to-nearest-even
// cast of the updated master (strata/half.hpp), bit for bit, after every step. The masters span
// f16's overflow (x 1e5: inf) and its subnormals (x 1e-6) as well as ordinary values.
#include <cstdio>
#include <strata/half.hpp>
#include <string>

#include "offload/offload_checks.hpp"

namespace strata::plugin_check {
namespace {

constexpr uint64_t kSteps = 20;
constexpr uint16_t kUnwritten = 0xffff;  // a NaN in both formats: no master here is NaN

std::string hex(uint16_t bits) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%04x", bits);
  return text;
}

// One run with shard 2's copy in `big_dtype` (shards 0 and 1: bf16 and f16).
std::string first_difference(const Target& target, const OptimizerCase& c, int32_t big_dtype) {
  Instance<strata_offload_ops> plugin(target, config_for(target, c));
  ShardSet shards;
  shards.want_model_copy(0, STRATA_BF16);
  shards.want_model_copy(1, STRATA_F16);
  shards.want_model_copy(2, big_dtype);
  std::vector<float>& big = shards.master(2);
  for (size_t e = 0; e < big.size(); e += 4) big[e] *= 1e5f;
  for (size_t e = 1; e < big.size(); e += 4) big[e] *= 1e-6f;
  Lockstep run(plugin, shards, c.hyper, reads_v16(plugin));
  run.init_state();
  for (uint64_t t = 1; t <= kSteps; ++t) {
    for (size_t s = 0; s < shards.size(); ++s)
      shards.model(s).assign(shards.model(s).size(), kUnwritten);
    (void)run.step(t);  // the parameters' accuracy is optimizer.<name>'s business
    for (size_t s = 0; s < shards.size(); ++s) {
      const bool f16 = shards.model_dtype(s) == STRATA_F16;
      for (size_t e = 0; e < shards.master(s).size(); ++e) {
        const float master = shards.master(s)[e];
        const uint16_t want = f16 ? float_to_f16(master) : float_to_bf16(master);
        const uint16_t got = shards.model(s)[e];
        if (got != want) {
          return "step " + std::to_string(t) + ", shard " + std::to_string(s) + " (" +
                 (f16 ? "f16" : "bf16") + "), element " + std::to_string(e) + ": master " +
                 number_text(master) + ": expected " + hex(want) + ", got " + hex(got) +
                 (got == kUnwritten ? " (not written)" : "");
        }
      }
    }
  }
  return {};
}

}  // namespace

Verdict model_copy(const Target& target, const OptimizerCase& c) {
  Instance<strata_offload_ops> plugin(target, config_for(target, c));
  if (!plugin.ok()) return Verdict::fail(plugin.refusal());
  const int32_t writes = caps_of(plugin).writes_model_copy;
  if (writes != 1) {
    return Verdict::skip("caps.writes_model_copy " + std::to_string(writes) +
                         ": the runtime casts the model copies after step");
  }
  for (int32_t dtype : {STRATA_F16, STRATA_BF16}) {
    if (std::string diff = first_difference(target, c, dtype); !diff.empty()) {
      return Verdict::fail(c.name + ": " + diff);
    }
  }
  return Verdict::pass(c.name + ", " + std::to_string(2 * kSteps) + " steps");
}

}  // namespace strata::plugin_check
