// The learning rate and checkpoints through the host C API in one process (1 rank), with the real
// plugins: the schedule's lr reaches the optimizer (SGD moves a parameter by exactly lr × grad),
// the host's override, skipped fp16 steps leaving the schedule where it was, and a save and load
// that put back parameters, optimizer state, schedule position and the host's extra state.
#include <strata/strata.h>

#include <gtest/gtest.h>

#include "c_runtime.hpp"
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Runtime : strata_test::CRuntime {
  using CRuntime::CRuntime;
  void add(const char* name, int32_t dtype, void* data, void* grad, uint64_t count) {
    strata_param_desc d{sizeof(d), name, dtype, {STRATA_DEVICE_HOST, 0}, count, data, grad};
    ASSERT_EQ(strata_register_param(rt, &d, nullptr, &err), STRATA_OK) << err.message;
  }
  void finalize() { ASSERT_EQ(strata_finalize(rt, &err), STRATA_OK) << err.message; }
  double lr() const {
    double value = -1;
    EXPECT_EQ(strata_lr(rt, &value), STRATA_OK);
    return value;
  }
};

// SGD without momentum: a step moves w by exactly -lr × g, so the lr each step used can be read off.
std::string sgd_manifest(const std::string& extra) {
  return R"({"train_micro_batch_size_per_gpu": 1,
             "optimizer": {"type": "SGD", "params": {"lr": 0.5}})" + extra + "}";
}
const char* kLinearWarmup = R"(, "scheduler": {"type": "WarmupLR", "params": {
    "warmup_min_lr": 0.0, "warmup_max_lr": 0.1, "warmup_num_steps": 4, "warmup_type": "linear"}})";

// A fresh folder for this test's checkpoints.
std::string scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("strata-engine-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  return dir.string();
}

TEST(Schedule, WarmupLrReachesTheOptimizerStepByStep) {
  Runtime r(sgd_manifest(kLinearWarmup));
  std::vector<float> w = {0.0f}, g = {0.0f};
  r.add("w", STRATA_F32, w.data(), g.data(), 1);
  r.finalize();
  // DeepSpeed: min_lr until the first scheduler step, then min + (max - min) × i / n up to n.
  const double expected[] = {0.0, 0.0, 0.025, 0.05, 0.075, 0.1, 0.1};
  for (double lr : expected) {
    EXPECT_DOUBLE_EQ(r.lr(), lr);
    const float before = w[0];
    g[0] = 1.0f;
    ASSERT_EQ(r.step().outcome, STRATA_STEP_APPLIED);
    EXPECT_NEAR(before - w[0], lr, 1e-7) << "the step did not use the schedule's lr " << lr;
  }
}

TEST(Schedule, TheHostOverridesTheLrUntilItClearsTheOverride) {
  Runtime r(sgd_manifest(kLinearWarmup));
  std::vector<float> w = {0.0f}, g = {0.0f};
  r.add("w", STRATA_F32, w.data(), g.data(), 1);
  r.finalize();
  ASSERT_EQ(strata_set_lr(r.rt, 0.25, &r.err), STRATA_OK) << r.err.message;
  for (int i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(r.lr(), 0.25);
    const float before = w[0];
    g[0] = 1.0f;
    r.step();
    EXPECT_NEAR(before - w[0], 0.25, 1e-7);
  }
  // Cleared: the schedule kept counting underneath (3 applied steps: last_batch_iteration 2).
  ASSERT_EQ(strata_set_lr(r.rt, std::nan(""), &r.err), STRATA_OK) << r.err.message;
  EXPECT_DOUBLE_EQ(r.lr(), 0.05);
  EXPECT_EQ(strata_set_lr(r.rt, -1.0, &r.err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(r.err.message).find("set_lr: expected a finite learning rate >= 0"),
            std::string::npos) << r.err.message;
}

TEST(Schedule, WithoutASchedulerTheLrIsTheOptimizers) {
  Runtime r(sgd_manifest(""));
  std::vector<float> w = {0.0f}, g = {0.0f};
  r.add("w", STRATA_F32, w.data(), g.data(), 1);
  r.finalize();
  EXPECT_DOUBLE_EQ(r.lr(), 0.5);
}

// fp16: a step with an inf gradient is skipped on every rank and, as in DeepSpeed, does not move
// the schedule; the next applied step uses the lr the skipped one would have.
TEST(Schedule, SkippedFp16StepsDoNotAdvanceTheSchedule) {
  Runtime r(sgd_manifest(std::string(kLinearWarmup) + R"(, "fp16": {"enabled": true})"));
  std::vector<uint16_t> w = {0}, g = {0};  // f16 bits: 0.0
  r.add("w", STRATA_F16, w.data(), g.data(), 1);
  r.finalize();
  g[0] = 0x3c00;  // 1.0 (times the loss scale the host would apply: the runtime unscales it)
  r.step();
  g[0] = 0x3c00;
  r.step();  // two applied steps: last_batch_iteration 1, lr 0.025 next
  EXPECT_DOUBLE_EQ(r.lr(), 0.025);
  g[0] = 0x7c00;  // +inf
  EXPECT_EQ(r.step().outcome, STRATA_STEP_SKIPPED);
  EXPECT_DOUBLE_EQ(r.lr(), 0.025) << "a skipped step advanced the schedule";
}

// One process saves, trains on, loads the checkpoint back and trains the same steps again: every
// parameter, the Adam moments (the steps after the load match bitwise), the lr and the host's
// extra state come back.
TEST(Checkpoint, SaveTrainLoadRetrainIsBitwiseTheSame) {
  const std::string dir = scratch("roundtrip");
  Runtime r(R"({"train_micro_batch_size_per_gpu": 1,
               "optimizer": {"type": "AdamW", "params": {"lr": 0.01}},
               "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}}})");
  std::vector<float> w(37), g(37);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i);
  r.add("w", STRATA_F32, w.data(), g.data(), w.size());
  r.finalize();
  auto train = [&](int steps, int salt) {
    for (int s = 0; s < steps; ++s) {
      for (size_t i = 0; i < g.size(); ++i) g[i] = std::sin(static_cast<float>(i * 7 + s + salt));
      r.step();
    }
  };
  train(3, 0);
  const std::vector<float> at_save = w;
  const double lr_at_save = r.lr();
  strata_save_args save{sizeof(save), dir.c_str(), "mine", R"({"epoch": 4})", 1};
  ASSERT_EQ(strata_save(r.rt, &save, &r.err), STRATA_OK) << r.err.message;
  EXPECT_TRUE(fs::exists(fs::path(dir) / "mine" / "metadata.json"));
  EXPECT_TRUE(fs::exists(fs::path(dir) / "mine" / "rank00000.shard"));
  train(4, 100);
  const std::vector<float> after_four = w;
  ASSERT_NE(after_four, at_save);

  strata_load_args load{sizeof(load), dir.c_str(), nullptr};  // latest
  strata_load_result loaded{};
  loaded.struct_size = sizeof(loaded);
  ASSERT_EQ(strata_load(r.rt, &load, &loaded, &r.err), STRATA_OK) << r.err.message;
  EXPECT_EQ(std::string(loaded.tag), "mine");
  EXPECT_EQ(std::string(loaded.extra_json), R"({"epoch":4})");
  EXPECT_EQ(loaded.global_steps, 3u);
  EXPECT_EQ(w, at_save);
  EXPECT_DOUBLE_EQ(r.lr(), lr_at_save);
  train(4, 100);
  EXPECT_EQ(w, after_four) << "the optimizer state or the schedule did not come back exactly";
  fs::remove_all(dir);
}

TEST(Checkpoint, MisuseIsRefusedWithTheReason) {
  const std::string dir = scratch("misuse");
  Runtime r(R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 2,
               "optimizer": {"type": "SGD", "params": {"lr": 0.1}}})");
  std::vector<float> w(4), g(4);
  r.add("w", STRATA_F32, w.data(), g.data(), w.size());
  r.finalize();
  strata_load_args load{sizeof(load), dir.c_str(), nullptr};
  EXPECT_EQ(strata_load(r.rt, &load, nullptr, &r.err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(r.message().find(dir + "/latest: cannot read it"), std::string::npos) << r.message();
  strata_save_args bad_tag{sizeof(bad_tag), dir.c_str(), "../up", nullptr, 1};
  EXPECT_EQ(strata_save(r.rt, &bad_tag, &r.err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(r.message().find("tag '../up' cannot name a checkpoint folder"), std::string::npos) << r.message();
  strata_save_args bad_extra{sizeof(bad_extra), dir.c_str(), "t", "[1, 2]", 1};
  EXPECT_EQ(strata_save(r.rt, &bad_extra, &r.err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(r.message().find("extra_json: expected the text of a JSON object"), std::string::npos) << r.message();
  r.step();  // the first of two micro-steps
  strata_save_args mid{sizeof(mid), dir.c_str(), "t", nullptr, 1};
  EXPECT_EQ(strata_save(r.rt, &mid, &r.err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(r.message().find("in the middle of an accumulation"), std::string::npos) << r.message();
  // None of these ended the run: the next step and a save work.
  r.step();
  EXPECT_EQ(strata_save(r.rt, &mid, &r.err), STRATA_OK) << r.message();
  fs::remove_all(dir);
}

}  // namespace
