// The batch at a world size (elastic/batch_rules.hpp): DeepSpeed's rule, the restart rule that
// keeps the first run's global batch by another accumulation, and the elasticity block's reading.
#include "elastic/batch_rules.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace strata::elastic {
namespace {

using ::testing::HasSubstr;

BatchPlan plan_of(const char* text) { return read_batch_plan(nlohmann::json::parse(text), "job.json"); }

std::string refusal(const BatchPlan& plan, uint64_t first, uint64_t world) {
  try {
    batch_at(plan, first, world, "job.json");
  } catch (const BatchError& e) {
    return e.what();
  }
  return "";
}

TEST(BatchRules, FirstRunFollowsDeepSpeed) {
  const Batch b = batch_at(plan_of(R"({"train_batch_size": 256, "gradient_accumulation_steps": 1})"), 0, 4, "job.json");
  EXPECT_EQ(b.train_batch_size, 256u);
  EXPECT_EQ(b.micro_batch_size, 64u);
  EXPECT_EQ(b.gradient_accumulation_steps, 1u);
}

// The embedded default's keys at 4 ranks, restarted at 2: the micro-batch stays 64 and the
// accumulation doubles (DeepSpeed's rule alone would double the micro-batch instead).
TEST(BatchRules, RestartKeepsGlobalBatchAndMicroBatch) {
  const BatchPlan plan = plan_of(R"({"train_batch_size": 256, "gradient_accumulation_steps": 1})");
  const Batch b = batch_at(plan, 4, 2, "job.json");
  EXPECT_EQ(b.train_batch_size, 256u);
  EXPECT_EQ(b.micro_batch_size, 64u);
  EXPECT_EQ(b.gradient_accumulation_steps, 2u);
  const Batch one = batch_at(plan, 4, 1, "job.json");
  EXPECT_EQ(one.gradient_accumulation_steps, 4u);
}

TEST(BatchRules, RestartRefusesASizeThatBreaksTheGlobalBatchNamingTheOnesThatWork) {
  const BatchPlan plan = plan_of(R"({"train_batch_size": 256, "train_micro_batch_size_per_gpu": 64})");
  EXPECT_THAT(refusal(plan, 4, 3),
              HasSubstr("job.json: world size 3 cannot keep the global batch 256 of the first run (4 ranks, "
                        "micro-batch 64)"));
  EXPECT_THAT(refusal(plan, 4, 3), HasSubstr("sizes that do: 1, 2, 4"));
  EXPECT_EQ(refusal(plan, 4, 2), "");
}

// Only micro-batch and accumulation given: the global batch grows with the world in DeepSpeed's
// rule; a restart keeps the first run's.
TEST(BatchRules, RestartKeepsAGlobalBatchThatWasDerived) {
  const BatchPlan plan = plan_of(R"({"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 3})");
  const Batch b = batch_at(plan, 4, 2, "job.json");
  EXPECT_EQ(b.train_batch_size, 96u);
  EXPECT_EQ(b.gradient_accumulation_steps, 6u);
}

TEST(BatchRules, DeepSpeedRuleMessagesNameTheSource) {
  EXPECT_THAT(refusal(plan_of(R"({"train_batch_size": 10, "train_micro_batch_size_per_gpu": 4})"), 0, 2),
              HasSubstr("job.json: train_batch_size 10 != train_micro_batch_size_per_gpu 4"));
  EXPECT_THAT(refusal(plan_of(R"({})"), 0, 2),
              HasSubstr("job.json: Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided"));
}

TEST(BatchRules, ElasticityBlockSetsTheBatchAtEverySize) {
  const BatchPlan plan = plan_of(
      R"({"elasticity": {"enabled": true, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4, 6],
                          "min_gpus": 1, "max_gpus": 10000, "version": 0.1}})");
  ASSERT_TRUE(plan.elasticity.has_value());
  // DeepSpeed 0.14 gives 1680 for this config (its documentation's example), valid at 1..10000.
  for (const uint64_t world : {1u, 2u, 4u, 5u, 8u}) {
    const Batch b = batch_at(plan, 4, world, "job.json");
    EXPECT_EQ(b.train_batch_size, 1680u) << world;
    EXPECT_EQ(b.micro_batch_size * b.gradient_accumulation_steps * world, 1680u) << world;
  }
  EXPECT_THAT(refusal(plan, 0, 11), HasSubstr("job.json: elasticity: world size 11 is not one of the valid sizes"));
}

TEST(BatchRules, ElasticityBlockRefusesBatchKeysUnlessTold) {
  const char* both = R"({"train_batch_size": 64, "elasticity": {"enabled": true, "max_train_batch_size": 100,
                         "micro_batch_sizes": [2]}})";
  try {
    plan_of(both);
    FAIL() << "no refusal";
  } catch (const BatchError& e) {
    EXPECT_THAT(e.what(), HasSubstr("job.json: train_batch_size is set beside an enabled elasticity block"));
  }
  const BatchPlan told = plan_of(R"({"train_batch_size": 64, "elasticity": {"enabled": true,
      "max_train_batch_size": 100, "micro_batch_sizes": [2], "ignore_non_elastic_batch_info": true, "version": 0.1}})");
  EXPECT_TRUE(told.elasticity.has_value());
  // A disabled block changes nothing.
  EXPECT_FALSE(plan_of(R"({"train_batch_size": 64, "elasticity": {"enabled": false}})").elasticity.has_value());
}

TEST(BatchRules, ElasticityBlockBadInputNamesTheKey) {
  const auto message = [](const char* block) {
    try {
      plan_of(block);
    } catch (const BatchError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_THAT(message(R"({"elasticity": {"enabled": true, "micro_batch_sizes": [2]}})"),
              HasSubstr("job.json: elasticity.max_train_batch_size: required when elasticity is enabled"));
  EXPECT_THAT(message(R"({"elasticity": {"enabled": true, "max_train_batch_size": 8, "micro_batch_sizes": [0]}})"),
              HasSubstr("elasticity.micro_batch_sizes: expected a non-empty list of positive integers, got [0]"));
  EXPECT_THAT(message(R"({"elasticity": {"enabled": true, "max_train_batch_size": 8, "micro_batch_sizes": [2],
                          "min_gpus": 4, "max_gpus": 2}})"),
              HasSubstr("elasticity.min_gpus: 4 is above max_gpus 2"));
  EXPECT_THAT(message(R"({"elasticity": {"enabled": true, "max_train_batch_size": 8, "micro_batch_sizes": [2],
                          "max_gpu": 2}})"),
              HasSubstr("elasticity.max_gpu: unknown key"));
  EXPECT_THAT(message(R"({"elasticity": {"enabled": "yes"}})"), HasSubstr("elasticity.enabled: expected true or false"));
  // Bounds beyond any real job, so that a hostile manifest cannot overflow or stall the arithmetic.
  EXPECT_THAT(message(R"({"elasticity": {"enabled": true, "max_train_batch_size": 8, "micro_batch_sizes": [2],
                          "max_gpus": 1000000000}})"),
              HasSubstr("elasticity.max_gpus: expected at most 131072, got 1000000000"));
  EXPECT_THAT(message(R"({"elasticity": {"enabled": true, "max_train_batch_size": 1e15, "micro_batch_sizes": [2]}})"),
              HasSubstr("elasticity.max_train_batch_size: expected at most 1099511627776"));
}

}  // namespace
}  // namespace strata::elastic
