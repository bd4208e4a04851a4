// Composition of each plugin's config from DeepSpeed blocks and the stratum's own "config".
#include "test_util.hpp"

namespace strata::rt::test {
namespace {

using nlohmann::json;

TEST(Compose, EmptyManifestGivesEmptyObjects) {
  const Manifest m = load_inline("{}");
  EXPECT_EQ(m.comm.config, json::object());
  EXPECT_EQ(m.sharding.config, json::object());
  EXPECT_EQ(m.precision.config, json::object());
  EXPECT_EQ(m.offload.config, json::object());
}

TEST(Compose, CommGetsItsOwnConfigOnly) {
  const Manifest m = load_inline(R"({"comm": {"config": {"fusion_threshold_mb": 64}},
                                     "zero_optimization": {"stage": 2}})");
  EXPECT_EQ(m.comm.config, json::parse(R"({"fusion_threshold_mb": 64})"));
}

TEST(Compose, ShardingIsZeroOptimizationMergedWithConfig) {
  const Manifest m = load_inline(R"({
      "zero_optimization": {"stage": 2, "reduce_bucket_size": 500, "overlap_comm": true},
      "sharding": {"config": {"stage": 3, "overlap_comm": null, "extra": 1}}})");
  EXPECT_EQ(m.sharding.config,
            json::parse(R"({"stage": 3, "reduce_bucket_size": 500, "extra": 1})"));
}

// DeepSpeed's top-level communication_data_type is the sharding stratum's (it reduces the
// gradients); a value inside zero_optimization or sharding.config wins.
TEST(Compose, ShardingTakesCommunicationDataType) {
  const Manifest top = load_inline(R"({"communication_data_type": "fp16",
                                       "zero_optimization": {"stage": 2}})");
  EXPECT_EQ(top.sharding.config,
            json::parse(R"({"stage": 2, "communication_data_type": "fp16"})"));
  const Manifest inner = load_inline(R"({"communication_data_type": "fp16",
      "zero_optimization": {"communication_data_type": "bf16"}})");
  EXPECT_EQ(inner.sharding.config, json::parse(R"({"communication_data_type": "bf16"})"));
  const Manifest none = load_inline(R"({"communication_data_type": null})");
  EXPECT_EQ(none.sharding.config, json::object());
}

TEST(Compose, PrecisionTakesFp16AndBf16Blocks) {
  const Manifest fp16 = load_inline(R"({"fp16": {"enabled": true, "loss_scale_window": 100}})");
  EXPECT_EQ(fp16.precision.config,
            json::parse(R"({"fp16": {"enabled": true, "loss_scale_window": 100}})"));

  const Manifest both = load_inline(R"({"fp16": {"enabled": false}, "bf16": {"enabled": true},
                                        "precision": {"config": {"fp16": {"initial_scale_power": 8}}}})");
  EXPECT_EQ(both.precision.config,
            json::parse(R"({"fp16": {"enabled": false, "initial_scale_power": 8},
                            "bf16": {"enabled": true}})"));
}

TEST(Compose, Bfloat16IsDeepSpeedsAliasOfBf16) {
  const Manifest m = load_inline(R"({"bfloat16": {"enabled": true}})");
  EXPECT_EQ(m.precision.config, json::parse(R"({"bf16": {"enabled": true}})"));
}

TEST(Compose, OffloadTakesOptimizerAndOffloadOptimizer) {
  const Manifest m = load_inline(R"({
      "optimizer": {"type": "AdamW", "params": {"lr": 0.001}},
      "zero_optimization": {"stage": 1, "offload_optimizer": {"device": "cpu"}},
      "offload": {"config": {"optimizer": {"params": {"lr": 0.01}}, "threads": 2}}})");
  EXPECT_EQ(m.offload.config, json::parse(R"({
      "optimizer": {"type": "AdamW", "params": {"lr": 0.01}},
      "offload_optimizer": {"device": "cpu"},
      "threads": 2})"));
  // The sharding plugin still sees the whole zero_optimization block.
  EXPECT_EQ(m.sharding.config["offload_optimizer"], json::parse(R"({"device": "cpu"})"));
}

TEST(Compose, OffloadWithoutDeepSpeedBlocks) {
  const Manifest m = load_inline(R"({"zero_optimization": {"stage": 0}})");
  EXPECT_EQ(m.offload.config, json::object());
}

TEST(Compose, OverridesReachThePluginConfigs) {
  const Manifest m = load_inline(R"({"zero_optimization": {"stage": 1}})",
                                 R"({"zero_optimization": {"stage": 2}})");
  EXPECT_EQ(m.sharding.config, json::parse(R"({"stage": 2})"));
}

}  // namespace
}  // namespace strata::rt::test
