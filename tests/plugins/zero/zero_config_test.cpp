// strata_zero's configuration: DeepSpeed's zero_optimization keys, types and values.
#include "zero_test_support.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace strata::zero_test {
namespace {

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

TEST(ZeroConfig, StagesOneToThreeAreAvailable) {
  RecordingHost host;
  for (int stage = 1; stage <= 3; ++stage) {
    Zero zero(host, R"({"stage": )" + std::to_string(stage) + "}");
    ASSERT_EQ(zero.created(), STRATA_OK) << zero.message();
    strata_sharding_caps caps{};
    caps.struct_size = sizeof(caps);
    ASSERT_EQ(zero.query(&caps), STRATA_OK) << zero.message();
    EXPECT_EQ(caps.stage, stage);
    EXPECT_EQ(caps.shards_replicated, 0) << "stages 1-3 partition the shards";
  }
  EXPECT_TRUE(host.lines(STRATA_LOG_WARN).empty());
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
      {R"({"overlap_comm": "yes"})",
       "zero_optimization.overlap_comm: expected true, false or null"},
      {R"({"contiguous_gradients": 1})",
       "zero_optimization.contiguous_gradients: expected true or false"},
      {R"({"allgather_bucket_size": 0})",
       "zero_optimization.allgather_bucket_size: expected a positive integer, got 0"},
      {R"({"stage3_max_live_parameters": "1e9"})",
       "zero_optimization.stage3_max_live_parameters: expected a non-negative integer"},
      {R"({"offload_optimizer": 3})",
       "zero_optimization.offload_optimizer: expected an object or null"},
      {R"({"mics_shard_size": 2.5})", "zero_optimization.mics_shard_size: expected an integer"},
      {R"({"communication_data_type": "fp8"})",
       R"(zero_optimization.communication_data_type: expected "fp32", "fp16", "bf16" or null)"},
      {R"({"communication_data_type": 16})",
       R"(zero_optimization.communication_data_type: expected "fp32", "fp16", "bf16" or null)"},
  };
  RecordingHost host;
  for (const Case& c : cases) {
    Zero zero(host, c.json);
    EXPECT_EQ(zero.created(), STRATA_ERR_INVALID_ARGUMENT) << c.json;
    EXPECT_TRUE(contains(zero.message(), c.expected)) << c.json << " -> " << zero.message();
  }
}

// DeepSpeed's top-level communication_data_type (the runtime passes it here) acts at every stage.
TEST(ZeroConfig, CommunicationDataTypeIsAcceptedAtEveryStageWithoutWarnings) {
  for (const char* dtype : {"\"fp32\"", "\"fp16\"", "\"bf16\"", "null"}) {
    for (int stage = 0; stage <= 3; ++stage) {
      RecordingHost host;
      Zero zero(host, R"({"stage": )" + std::to_string(stage) +
                          R"(, "communication_data_type": )" + dtype + "}");
      ASSERT_EQ(zero.created(), STRATA_OK) << dtype << " stage " << stage << ": "
                                           << zero.message();
      EXPECT_TRUE(host.lines(STRATA_LOG_WARN).empty()) << dtype << " stage " << stage;
    }
  }
}

TEST(ZeroConfig, TheConfigMustBeAJsonObject) {
  RecordingHost host;
  Zero list(host, "[1, 2]");
  EXPECT_EQ(list.created(), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(list.message(), "zero_optimization: expected a JSON object"))
      << list.message();
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
                          "reduce_scatter", "round_robin_gradients",
                          "stage3_prefetch_bucket_size", "max_live_parameters", "cpu_offload"}) {
    EXPECT_TRUE(contains(text, key)) << key << " missing from: " << text;
  }
  // Used by this plugin, or owned by the offload stratum: not warned about.
  for (const char* key :
       {"reduce_bucket_size", "offload_optimizer", "offload_param", "sub_group_size"}) {
    EXPECT_FALSE(contains(text, key)) << key << " should not be in: " << text;
  }
}

}  // namespace
}  // namespace strata::zero_test

namespace strata::zero_test {
namespace {

std::string warning_of(RecordingHost& host) {
  const auto warnings = host.lines(STRATA_LOG_WARN);
  return warnings.size() == 1 ? warnings[0].text
                              : "(" + std::to_string(warnings.size()) + " warnings)";
}

TEST(ZeroConfig, StageThreeKeysTakeEffectAtStageThreeOnly) {
  const std::string keys = R"("overlap_comm": true, "contiguous_gradients": true,
    "allgather_bucket_size": 5e8, "reduce_scatter": true, "stage3_prefetch_bucket_size": 5e7,
    "param_persistence_threshold": 1e5, "stage3_max_live_parameters": 1e9,
    "sub_group_size": 1e9, "stage3_max_reuse_distance": 1e9, "round_robin_gradients": false)";
  RecordingHost at3;
  Zero three(at3, R"({"stage": 3, )" + keys + "}");
  ASSERT_EQ(three.created(), STRATA_OK) << three.message();
  const std::string w3 = warning_of(at3);
  // sub_group_size belongs to the offload stratum (the nvme pieces): not warned about here.
  EXPECT_TRUE(contains(w3, "no effect at stage 3: round_robin_gradients")) << w3;
  EXPECT_FALSE(contains(w3, "sub_group_size")) << w3;
  for (const char* used : {"overlap_comm", "contiguous_gradients", "allgather_bucket_size",
                           "reduce_scatter", "prefetch_bucket_size", "persistence", "max_live",
                           "max_reuse_distance"}) {
    EXPECT_FALSE(contains(w3, used)) << used << " is used at stage 3: " << w3;
  }
  RecordingHost at1;
  Zero one(at1, R"({"stage": 1, )" + keys + "}");
  ASSERT_EQ(one.created(), STRATA_OK) << one.message();
  const std::string w1 = warning_of(at1);
  for (const char* unused : {"contiguous_gradients", "stage3_prefetch_bucket_size",
                             "param_persistence_threshold", "stage3_max_live_parameters",
                             "stage3_max_reuse_distance"}) {
    EXPECT_TRUE(contains(w1, unused)) << unused << " has no effect at stage 1: " << w1;
  }
  for (const char* used : {"overlap_comm", "allgather_bucket_size", "reduce_scatter"}) {
    EXPECT_FALSE(contains(w1, used)) << used << " is used at stage 1: " << w1;
  }
}

TEST(ZeroConfig, SettingsStrataCannotTurnOffAreNamedWithWhy) {
  RecordingHost host;
  Zero zero(host, R"({"stage": 2, "reduce_scatter": false, "allgather_partitions": false,
                      "ignore_unused_parameters": false})");
  ASSERT_EQ(zero.created(), STRATA_OK) << zero.message();
  const std::string w = warning_of(host);
  EXPECT_TRUE(contains(w, "reduce_scatter (false is not honoured: Strata always reduce-scatters)"))
      << w;
  EXPECT_TRUE(contains(w, "allgather_partitions (false is not honoured: Strata always allgathers)"))
      << w;
  EXPECT_TRUE(contains(w, "ignore_unused_parameters (false is not honoured")) << w;
}

TEST(ZeroConfig, AliasesMayRepeatOnlyWithTheSameValue) {
  RecordingHost host;
  Zero same(
      host,
      R"({"stage": 3, "max_live_parameters": 1e9, "stage3_max_live_parameters": 1000000000})");
  EXPECT_EQ(same.created(), STRATA_OK) << same.message();
  for (const char* pair :
       {R"("prefetch_bucket_size": 10, "stage3_prefetch_bucket_size": 20)",
        R"("param_persistence_threshold": 10, "stage3_param_persistence_threshold": 20)",
        R"("max_live_parameters": 10, "stage3_max_live_parameters": 20)",
        R"("max_reuse_distance": 10, "stage3_max_reuse_distance": 20)"}) {
    Zero zero(host, std::string(R"({"stage": 3, )") + pair + "}");
    EXPECT_EQ(zero.created(), STRATA_ERR_INVALID_ARGUMENT) << pair;
    EXPECT_TRUE(contains(zero.message(), "conflicts with")) << zero.message();
    EXPECT_TRUE(contains(zero.message(), "aliases")) << zero.message();
  }
  Zero named(host,
             R"({"stage": 3, "stage3_prefetch_bucket_size": 20, "prefetch_bucket_size": 10})");
  EXPECT_EQ(named.message(), "zero_optimization.stage3_prefetch_bucket_size: 20 conflicts with "
                             "prefetch_bucket_size: 10 (the two names are aliases; give one)");
}

TEST(ZeroConfig, OutOfRangeValuesNameTheKey) {
  RecordingHost host;
  for (const char* bad : {R"("allgather_bucket_size": 0)", R"("reduce_bucket_size": -1)",
                          R"("stage3_max_live_parameters": -1)", R"("prefetch_bucket_size": 1.5)",
                          R"("param_persistence_threshold": "big")",
                          R"("stage3_max_reuse_distance": -5)"}) {
    Zero zero(host, std::string(R"({"stage": 3, )") + bad + "}");
    EXPECT_EQ(zero.created(), STRATA_ERR_INVALID_ARGUMENT) << bad;
    const std::string key = std::string(bad).substr(1, std::string(bad).find('"', 1) - 1);
    EXPECT_TRUE(contains(zero.message(), "zero_optimization." + key + ": expected"))
        << zero.message();
  }
}

strata_status query_without_reduce_scatter(void* self, strata_comm_caps* caps, strata_error* err) {
  const strata_status status = CommEnvironment::ops().query(self, caps, err);
  caps->collective_mask &= ~STRATA_COLL_BIT(STRATA_COLL_REDUCE_SCATTER);
  return status;
}

TEST(ZeroConfig, PartitioningStagesNeedReduceScatterAndAllgather) {
  strata_comm_ops limited = CommEnvironment::ops();
  limited.query = query_without_reduce_scatter;
  RecordingHost host;
  host.api()->comm = &limited;
  Zero plain(host, R"({"stage": 0})");
  EXPECT_EQ(plain.created(), STRATA_OK) << "stage 0 only allreduces: " << plain.message();
  for (int stage = 1; stage <= 3; ++stage) {
    Zero zero(host, R"({"stage": )" + std::to_string(stage) + "}");
    EXPECT_EQ(zero.created(), STRATA_ERR_UNSUPPORTED) << stage;
    EXPECT_EQ(zero.message(),
              "zero stage " + std::to_string(stage) +
                  " needs reduce_scatter and allgather, but the comm stratum "
                  "offers only: allreduce, allgather, allgatherv, broadcast, barrier");
  }
}

// ABI 1.3: an optional collective may be absent as a NULL function, whatever the mask says.
TEST(ZeroConfig, ANullReduceScatterIsNotOffered) {
  strata_comm_ops limited = CommEnvironment::ops();
  limited.reduce_scatter = nullptr;
  RecordingHost host;
  host.api()->comm = &limited;
  Zero zero(host, R"({"stage": 2})");
  EXPECT_EQ(zero.created(), STRATA_ERR_UNSUPPORTED);
  EXPECT_EQ(zero.message(), "zero stage 2 needs reduce_scatter and allgather, but the comm "
                            "stratum offers only: allreduce, allgather, allgatherv, broadcast, "
                            "barrier");
}

}  // namespace
}  // namespace strata::zero_test
