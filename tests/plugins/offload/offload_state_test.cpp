// strata_offload's optimizer state: accounted bytes per optimizer, lifetime, and the checks that
// tie step() to the shard list init_state() saw.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "optim_harness.hpp"

namespace strata::test {
namespace {

struct StateCase {
  std::string name;
  std::string config;
  size_t floats_per_element;
};

void PrintTo(const StateCase& c, std::ostream* os) { *os << c.name << " " << c.config; }

class OffloadStateBytes : public ::testing::TestWithParam<StateCase> {};

TEST_P(OffloadStateBytes, InitStateAccountsExactlyTheOptimizerState) {
  const StateCase& c = GetParam();
  FakeHost host;
  {
    Instance<strata_offload_ops> opt(offload_ops(), host, c.config);
    ASSERT_EQ(opt.status(), STRATA_OK) << opt.message();
    EXPECT_EQ(host.bytes(STRATA_MEM_OPTIMIZER_STATE), 0u) << "state before init_state";

    ShardSet shards({3, 101, 1, 64, 999});
    strata_error err = sdk::make_error();
    ASSERT_EQ(opt.ops().init_state(opt.self(), shards.data(), shards.size(), &err), STRATA_OK)
        << err.message;
    EXPECT_EQ(host.bytes(STRATA_MEM_OPTIMIZER_STATE),
              c.floats_per_element * sizeof(float) * shards.elements());

    // A second init_state replaces the state rather than adding to it.
    ShardSet fewer({5, 6});
    ASSERT_EQ(opt.ops().init_state(opt.self(), fewer.data(), fewer.size(), &err), STRATA_OK)
        << err.message;
    EXPECT_EQ(host.bytes(STRATA_MEM_OPTIMIZER_STATE),
              c.floats_per_element * sizeof(float) * fewer.elements());
    for (auto category :
         {STRATA_MEM_PARAMS, STRATA_MEM_GRADS, STRATA_MEM_MASTER, STRATA_MEM_COMM_BUFFERS}) {
      EXPECT_EQ(host.bytes(category), 0u) << "category " << category;
    }
  }
  EXPECT_EQ(host.bytes(STRATA_MEM_OPTIMIZER_STATE), 0u) << "state left after destroy";
}

INSTANTIATE_TEST_SUITE_P(
    Offload, OffloadStateBytes,
    ::testing::Values(
        StateCase{"Adam", R"({"optimizer": {"type": "Adam"}})", 2},
        StateCase{"AdamW", R"({"optimizer": {"type": "AdamW"}})", 2},
        StateCase{"SgdMomentum",
                  R"({"optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9}}})", 1},
        StateCase{"SgdNesterov", R"({"optimizer": {"type": "SGD", "params":
                                    {"lr": 0.1, "momentum": 0.5, "nesterov": true}}})",
                  1},
        StateCase{"SgdPlain", R"({"optimizer": {"type": "SGD", "params": {"lr": 0.1}}})", 0}),
    [](const auto& info) { return info.param.name; });

class OffloadStepChecks : public ::testing::Test {
 protected:
  strata_status step(const ShardSet& shards, uint64_t t = 1) {
    strata_step_args args = sdk::make_step_args(t, 1.0, 1.0);
    return opt_.ops().step(opt_.self(), shards.data(), shards.size(), &args, &err_);
  }
  strata_status init(const ShardSet& shards) {
    return opt_.ops().init_state(opt_.self(), shards.data(), shards.size(), &err_);
  }
  std::string message() const { return err_.message; }

  FakeHost host_;
  Instance<strata_offload_ops> opt_{offload_ops(), host_, R"({"optimizer": {"type": "Adam"}})"};
  strata_error err_ = sdk::make_error();
};

TEST_F(OffloadStepChecks, StepBeforeInitStateFails) {
  ShardSet shards({4});
  EXPECT_EQ(step(shards), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("init_state"), std::string::npos) << message();
}

TEST_F(OffloadStepChecks, DifferentShardListFails) {
  ShardSet shards({4, 5});
  ASSERT_EQ(init(shards), STRATA_OK) << message();
  ShardSet fewer({4});
  EXPECT_EQ(step(fewer), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("shards: step got 1 shards but init_state had 2"), std::string::npos)
      << message();
  ShardSet resized({4, 6});
  EXPECT_EQ(step(resized), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("shards[1]"), std::string::npos) << message();
  EXPECT_EQ(step(shards), STRATA_OK) << message();
}

TEST_F(OffloadStepChecks, BadArgumentsFail) {
  ShardSet shards({4});
  ASSERT_EQ(init(shards), STRATA_OK) << message();
  EXPECT_EQ(step(shards, 0), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("args.step"), std::string::npos) << message();
  EXPECT_EQ(opt_.ops().step(opt_.self(), shards.data(), shards.size(), nullptr, &err_),
            STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("args"), std::string::npos) << message();
  strata_step_args args = sdk::make_step_args(1, 1.0, -1.0);
  EXPECT_EQ(opt_.ops().step(opt_.self(), shards.data(), shards.size(), &args, &err_),
            STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("args.lr_factor"), std::string::npos) << message();
  EXPECT_EQ(opt_.ops().init_state(opt_.self(), nullptr, 2, &err_), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("shards: NULL"), std::string::npos) << message();
}

TEST_F(OffloadStepChecks, EmptyShardListIsANoOp) {
  ShardSet none(std::vector<uint64_t>{});
  ASSERT_EQ(init(none), STRATA_OK) << message();
  EXPECT_EQ(step(none), STRATA_OK) << message();
  EXPECT_EQ(host_.bytes(STRATA_MEM_OPTIMIZER_STATE), 0u);
}

}  // namespace
}  // namespace strata::test
