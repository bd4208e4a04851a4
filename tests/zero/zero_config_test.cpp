// strata_zero's configuration: DeepSpeed's zero_optimization keys, types and values.
#include "zero_test_support.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace strata::zero_test {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ZeroConfig, EmptyObjectIsStageZeroWithoutWarnings) {
  RecordingHost host;
  Zero zero(host, "{}");
  ASSERT_EQ(zero.created(), STRATA_OK) << zero.message();
  strata_sharding_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.stage = -1;
  ASSERT_EQ(zero.query(&caps), STRATA_OK) << zero.message();
  EXPECT_EQ(caps.stage, 0);
  EXPECT_EQ(caps.shards_replicated, 1);
  EXPECT_TRUE(host.lines(STRATA_LOG_WARN).empty());
}

TEST(ZeroConfig, QueryWritesOnlyTheFieldsInsideTheCallersStruct) {
  RecordingHost host;
  Zero zero(host, "{}");
  ASSERT_EQ(zero.created(), STRATA_OK) << zero.message();
  strata_sharding_caps caps{};
  caps.struct_size = offsetof(strata_sharding_caps, shards_replicated);  // an older, smaller struct
  caps.stage = -1;
  caps.shards_replicated = 42;
  ASSERT_EQ(zero.query(&caps), STRATA_OK) << zero.message();
  EXPECT_EQ(caps.stage, 0);
  EXPECT_EQ(caps.shards_replicated, 42);
}

TEST(ZeroConfig, StageOutsideZeroToThreeIsInvalid) {
  RecordingHost host;
  Zero zero(host, R"({"stage": 7})");
  EXPECT_EQ(zero.created(), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zero.message(), "zero_optimization.stage: expected 0, 1, 2 or 3, got 7");
  for (const char* bad : {"-1", "1.5", "\"2\"", "true", "null"}) {
    Zero other(host, std::string(R"({"stage": )") + bad + "}");
    EXPECT_EQ(other.created(), STRATA_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_TRUE(contains(other.message(), "zero_optimization.stage: expected 0, 1, 2 or 3, got"))
        << other.message();
  }
}

TEST(ZeroConfig, StagesOneToThreeAreNotInThisBuild) {
  RecordingHost host;
  for (int stage = 1; stage <= 3; ++stage) {
    Zero zero(host, R"({"stage": )" + std::to_string(stage) + "}");
    EXPECT_EQ(zero.created(), STRATA_ERR_UNSUPPORTED) << stage;
    EXPECT_TRUE(contains(zero.message(), "stage 0 only")) << zero.message();
    EXPECT_TRUE(contains(zero.message(), std::to_string(stage))) << zero.message();
  }
}

TEST(ZeroConfig, ReduceBucketSizeMustBeAPositiveInteger) {
  RecordingHost host;
  for (const char* bad : {"0", "-5", "2.5", "\"big\"", "true", "null", "[]"}) {
    Zero zero(host, std::string(R"({"reduce_bucket_size": )") + bad + "}");
    EXPECT_EQ(zero.created(), STRATA_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_EQ(zero.message(), std::string("zero_optimization.reduce_bucket_size: expected a "
                                          "positive integer, got ") + bad);
  }
  // DeepSpeed configs write sizes like 5e8: an integral float is an integer.
  Zero zero(host, R"({"reduce_bucket_size": 5e8})");
  EXPECT_EQ(zero.created(), STRATA_OK) << zero.message();
}

TEST(ZeroConfig, UnknownKeysAreNamed) {
  RecordingHost host;
  Zero zero(host, R"({"stage": 0, "reduce_bucket_sise": 1000})");
  EXPECT_EQ(zero.created(), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero.message(), "zero_optimization.reduce_bucket_sise: unknown key"))
      << zero.message();
}

TEST(ZeroConfig, WrongTypesNameTheKeyAndTheExpectedType) {
  struct Case {
    const char* json;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {R"({"overlap_comm": "yes"})", "zero_optimization.overlap_comm: expected true, false or null"},
      {R"({"contiguous_gradients": 1})", "zero_optimization.contiguous_gradients: expected true or false"},
      {R"({"allgather_bucket_size": -1})", "zero_optimization.allgather_bucket_size: expected a non-negative integer"},
      {R"({"stage3_max_live_parameters": "1e9"})", "zero_optimization.stage3_max_live_parameters: expected a non-negative integer"},
      {R"({"offload_optimizer": 3})", "zero_optimization.offload_optimizer: expected an object or null"},
      {R"({"mics_shard_size": 2.5})", "zero_optimization.mics_shard_size: expected an integer"},
  };
  RecordingHost host;
  for (const Case& c : cases) {
    Zero zero(host, c.json);
    EXPECT_EQ(zero.created(), STRATA_ERR_INVALID_ARGUMENT) << c.json;
    EXPECT_TRUE(contains(zero.message(), c.expected)) << c.json << " -> " << zero.message();
  }
}

TEST(ZeroConfig, TheConfigMustBeAJsonObject) {
  RecordingHost host;
  Zero list(host, "[1, 2]");
  EXPECT_EQ(list.created(), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(list.message(), "zero_optimization: expected a JSON object")) << list.message();
  Zero broken(host, "{\"stage\": ");
  EXPECT_EQ(broken.created(), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(broken.message(), "zero_optimization: invalid JSON")) << broken.message();
}

TEST(ZeroConfig, KeysWithoutEffectAtStageZeroGetOneWarningNamingThem) {
  RecordingHost host;
  Zero zero(host, R"({
    "stage": 0, "reduce_bucket_size": 5e8, "allgather_bucket_size": 5e8,
    "overlap_comm": true, "contiguous_gradients": true, "reduce_scatter": true,
    "round_robin_gradients": false, "sub_group_size": 1e9, "stage3_prefetch_bucket_size": 5e7,
    "max_live_parameters": 1e9, "cpu_offload": false,
    "offload_optimizer": {"device": "cpu", "pin_memory": true}, "offload_param": null})");
  ASSERT_EQ(zero.created(), STRATA_OK) << zero.message();
  const auto warnings = host.lines(STRATA_LOG_WARN);
  ASSERT_EQ(warnings.size(), 1u);
  const std::string& text = warnings[0].text;
  for (const char* key : {"allgather_bucket_size", "overlap_comm", "contiguous_gradients",
                          "reduce_scatter", "round_robin_gradients", "sub_group_size",
                          "stage3_prefetch_bucket_size", "max_live_parameters", "cpu_offload"}) {
    EXPECT_TRUE(contains(text, key)) << key << " missing from: " << text;
  }
  // Used by this plugin, or owned by the offload stratum: not warned about.
  for (const char* key : {"reduce_bucket_size", "offload_optimizer", "offload_param"}) {
    EXPECT_FALSE(contains(text, key)) << key << " should not be in: " << text;
  }
}

}  // namespace
}  // namespace strata::zero_test
