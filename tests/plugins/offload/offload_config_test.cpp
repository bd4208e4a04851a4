// strata_offload's config validation: every bad value gives the documented status and a message
// that names the JSON path; the accepted spellings work and query() reports them.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "optim_harness.hpp"

namespace strata::test {
namespace {

struct BadConfig {
  std::string name;
  std::string config;
  strata_status status;
  std::string expected;  // substring of the error message (the key path at least)
};

std::vector<BadConfig> bad_configs() {
  const auto adam = [](const std::string& params) {
    return R"({"optimizer": {"type": "Adam", "params": )" + params + "}}";
  };
  const auto sgd = [](const std::string& params) {
    return R"({"optimizer": {"type": "SGD", "params": )" + params + "}}";
  };
  const strata_status bad = STRATA_ERR_INVALID_ARGUMENT;
  return {
      {"NotJson", "{optimizer", bad, "config: not valid JSON"},
      {"NotAnObject", "[1, 2]", bad, "config: expected a JSON object"},
      {"MissingOptimizer", "{}", bad, R"(optimizer: missing; expected an object like {"type")"},
      {"OptimizerNotObject", R"({"optimizer": "adam"})", bad, "optimizer: expected an object"},
      {"MissingType", R"({"optimizer": {"params": {}}})", bad, "optimizer.type: missing"},
      {"TypeNotString", R"({"optimizer": {"type": 3}})", bad, "optimizer.type: expected one of"},
      {"UnknownType", R"({"optimizer": {"type": "Lamb"}})", bad,
       R"(optimizer.type: unsupported optimizer "Lamb"; supported: Adam, AdamW, SGD)"},
      {"UnknownOptimizerKey", R"({"optimizer": {"type": "Adam", "lr": 0.1}})", bad,
       "optimizer.lr: unknown key"},
      {"ParamsNotObject", adam("[0.1]"), bad, "optimizer.params: expected an object"},
      {"UnknownParam", adam(R"({"lr": 0.1, "amsgrad": true})"), bad,
       "optimizer.params.amsgrad: unknown key for adam; expected one of lr, betas, eps"},
      {"UnknownSgdParam", sgd(R"({"lr": 0.1, "betas": [0.9, 0.9]})"), bad,
       "optimizer.params.betas: unknown key for sgd"},
      {"LrZero", adam(R"({"lr": 0})"), bad,
       "optimizer.params.lr: expected a positive finite number, got 0"},
      {"LrNegative", sgd(R"({"lr": -0.5})"), bad,
       "optimizer.params.lr: expected a positive finite number, got -0.5"},
      {"LrString", adam(R"({"lr": "1e-3"})"), bad, "optimizer.params.lr: expected a positive"},
      {"SgdWithoutLr", sgd("{}"), bad, "optimizer.params.lr: required for SGD"},
      {"BetasOne", adam(R"({"betas": [0.9]})"), bad,
       "optimizer.params.betas: expected two numbers in [0, 1), got [0.9]"},
      {"BetasThree", adam(R"({"betas": [0.9, 0.99, 0.5]})"), bad,
       "optimizer.params.betas: expected two numbers in [0, 1)"},
      {"BetaIsOne", adam(R"({"betas": [0.9, 1.0]})"), bad, "optimizer.params.betas: expected two"},
      {"BetaNegative", adam(R"({"betas": [-0.1, 0.9]})"), bad, "optimizer.params.betas: expected"},
      {"BetasNotArray", adam(R"({"betas": 0.9})"), bad, "optimizer.params.betas: expected"},
      {"EpsZero", adam(R"({"eps": 0})"), bad, "optimizer.params.eps: expected a positive"},
      {"EpsNegative", adam(R"({"eps": -1e-8})"), bad, "optimizer.params.eps: expected a positive"},
      {"AdamNegativeDecay", adam(R"({"weight_decay": -0.01})"), bad,
       "optimizer.params.weight_decay: expected a non-negative finite number, got -0.01"},
      {"AdamWNegativeDecay", R"({"optimizer": {"type": "AdamW", "params": {"weight_decay": -1}}})",
       bad, "optimizer.params.weight_decay: expected a non-negative"},
      {"SgdNegativeDecay", sgd(R"({"lr": 0.1, "weight_decay": -1})"), bad,
       "optimizer.params.weight_decay: expected a non-negative"},
      {"SgdNegativeMomentum", sgd(R"({"lr": 0.1, "momentum": -0.9})"), bad,
       "optimizer.params.momentum: expected a non-negative"},
      {"NesterovWithoutMomentum", sgd(R"({"lr": 0.1, "nesterov": true})"), bad,
       "optimizer.params.nesterov: requires momentum > 0 and dampening 0, got momentum 0"},
      {"NesterovWithDampening",
       sgd(R"({"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "nesterov": true})"), bad,
       "optimizer.params.nesterov: requires momentum > 0 and dampening 0"},
      {"NesterovNotBool", sgd(R"({"lr": 0.1, "momentum": 0.9, "nesterov": 1})"), bad,
       "optimizer.params.nesterov: expected true or false, got 1"},
      {"BiasCorrectionNotBool", adam(R"({"bias_correction": "yes"})"), bad,
       "optimizer.params.bias_correction: expected true or false"},
      {"AdamWModeFalseOnAdamW",
       R"({"optimizer": {"type": "AdamW", "params": {"adam_w_mode": false}}})", bad,
       "optimizer.params.adam_w_mode: AdamW always decouples weight decay"},
      {"OffloadGpu", adam("{}").insert(1, R"("offload_optimizer": {"device": "gpu"}, )"), bad,
       R"(offload_optimizer.device: expected one of none, cpu, nvme, got "gpu")"},
      {"OffloadDeviceNotString", adam("{}").insert(1, R"("offload_optimizer": {"device": 1}, )"),
       bad, "offload_optimizer.device: expected one of none, cpu, nvme, got 1"},
      {"BufferCountOne",
       adam("{}").insert(1, R"("offload_optimizer": {"device": "nvme", "nvme_path": "/tmp",
                              "buffer_count": 1}, )"),
       bad, "offload_optimizer.buffer_count: expected an integer >= 2"},
      {"BufferCountFraction",
       adam("{}").insert(1, R"("offload_optimizer": {"device": "cpu", "buffer_count": 2.5}, )"),
       bad, "offload_optimizer.buffer_count: expected an integer >= 2"},
      {"NvmePathMissing",
       adam("{}").insert(1, R"("offload_optimizer": {"device": "nvme",
                              "nvme_path": "/nonexistent/strata-nvme"}, )"),
       bad, "offload_optimizer.nvme_path: /nonexistent/strata-nvme does not exist"},
      {"NvmePathNotADirectory",
       adam("{}").insert(1, R"("offload_optimizer": {"device": "nvme",
                              "nvme_path": "/proc/self/status"}, )"),
       bad, "offload_optimizer.nvme_path: /proc/self/status is not a directory"},
      // Not writable even for root.
      {"NvmePathNotWritable",
       adam("{}").insert(1, R"("offload_optimizer": {"device": "nvme", "nvme_path": "/proc"}, )"),
       bad, "offload_optimizer.nvme_path: cannot create a file in /proc"},
      {"NvmePathNotString",
       adam("{}").insert(1, R"("offload_optimizer": {"device": "nvme", "nvme_path": 5}, )"), bad,
       "offload_optimizer.nvme_path: expected a directory path, got 5"},
      {"PinMemoryNotBool",
       adam("{}").insert(1, R"("offload_optimizer": {"device": "cpu", "pin_memory": "yes"}, )"),
       bad, "offload_optimizer.pin_memory: expected true or false"},
      {"PartialOffload",
       adam("{}").insert(1, R"("offload_optimizer": {"device": "cpu", "ratio": 0.3}, )"),
       STRATA_ERR_UNSUPPORTED, "offload_optimizer.ratio: partial offload (ratio < 1)"},
      {"ParamNvmePathEmpty", adam("{}").insert(1, R"("offload_param": {"device": "nvme", "nvme_path": ""}, )"),
       bad, R"(offload_param.nvme_path: expected a directory path, got "")"},
      {"ParamBufferCountZero", adam("{}").insert(1, R"("offload_param": {"buffer_count": 0}, )"),
       bad, "offload_param.buffer_count: expected an integer >= 1 (buffers read ahead), got 0"},
      {"ParamBufferSizeFraction", adam("{}").insert(1, R"("offload_param": {"buffer_size": 2.5}, )"),
       bad, "offload_param.buffer_size: expected an integer >= 1 (parameter elements per buffer), got 2.5"},
      {"ParamOnGpu", adam("{}").insert(1, R"("offload_param": {"device": "gpu"}, )"), bad,
       R"(offload_param.device: expected one of none, cpu, nvme, got "gpu")"},
      {"ParamUnknownKey", adam("{}").insert(1, R"("offload_param": {"speed": 1}, )"), bad,
       "offload_param.speed: unknown key"},
      {"SubGroupZero", adam("{}").insert(1, R"("sub_group_size": 0, )"), bad,
       "zero_optimization.sub_group_size: expected an integer >= 1, got 0"},
      {"OffloadUnknownKey",
       adam("{}").insert(1, R"("offload_optimizer": {"device": "none", "speed": 9}, )"), bad,
       "offload_optimizer.speed: unknown key"},
      {"OffloadNotObject", adam("{}").insert(1, R"("offload_optimizer": "cpu", )"), bad,
       "offload_optimizer: expected an object"},
      {"UnknownTopLevelKey", adam("{}").insert(1, R"("scheduler": {}, )"), bad,
       "scheduler: unknown key in the offload config"},
  };
}

void PrintTo(const BadConfig& c, std::ostream* os) { *os << c.name << " " << c.config; }

class OffloadBadConfig : public ::testing::TestWithParam<BadConfig> {};

TEST_P(OffloadBadConfig, FailsNamingTheKey) {
  const BadConfig& c = GetParam();
  FakeHost host;
  Instance<strata_offload_ops> opt(offload_ops(), host, c.config);
  EXPECT_EQ(opt.status(), c.status) << opt.message();
  EXPECT_NE(opt.message().find(c.expected), std::string::npos)
      << "message: " << opt.message() << "\nexpected to contain: " << c.expected;
  EXPECT_EQ(opt.self(), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Offload, OffloadBadConfig, ::testing::ValuesIn(bad_configs()),
                         [](const auto& info) { return info.param.name; });

struct GoodConfig {
  std::string config;
  std::string optimizer;  // what query() must report
};

void PrintTo(const GoodConfig& c, std::ostream* os) { *os << c.config; }

class OffloadGoodConfig : public ::testing::TestWithParam<GoodConfig> {};

TEST_P(OffloadGoodConfig, CreatesAndReportsTheOptimizer) {
  FakeHost host;
  Instance<strata_offload_ops> opt(offload_ops(), host, GetParam().config);
  ASSERT_EQ(opt.status(), STRATA_OK) << opt.message();
  strata_offload_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.device_type = -1;
  strata_error err = sdk::make_error();
  ASSERT_EQ(opt.ops().query(opt.self(), &caps, &err), STRATA_OK) << err.message;
  EXPECT_EQ(caps.device_type, STRATA_DEVICE_HOST);
  ASSERT_NE(caps.optimizer, nullptr);
  EXPECT_EQ(std::string(caps.optimizer), GetParam().optimizer);
}

INSTANTIATE_TEST_SUITE_P(
    Offload, OffloadGoodConfig,
    ::testing::Values(
        GoodConfig{R"({"optimizer": {"type": "Adam"}})", "adam"},
        GoodConfig{R"({"optimizer": {"type": "aDaM", "params": {}}})", "adam"},
        GoodConfig{R"({"optimizer": {"type": "ADAMW", "params": {"lr": 1}}})", "adamw"},
        GoodConfig{R"({"optimizer": {"type": "AdamW", "params": {"adam_w_mode": true}}})", "adamw"},
        GoodConfig{R"({"optimizer": {"type": "sgd", "params": {"lr": 0.1, "momentum": 0.9}}})",
                   "sgd"},
        GoodConfig{R"({"optimizer": {"type": "SGD", "params": {"lr": 0.1}},
                       "offload_optimizer": {"device": "none"}})",
                   "sgd"},
        // DeepSpeed's other offload_optimizer keys are accepted wherever the state lives.
        GoodConfig{R"({"optimizer": {"type": "Adam"}, "offload_optimizer":
                       {"device": "none", "pin_memory": true, "buffer_count": 4}})",
                   "adam"},
        GoodConfig{R"({"optimizer": {"type": "Adam"}, "offload_optimizer": {}})", "adam"},
        GoodConfig{R"({"optimizer": {"type": "Adam"}, "offload_optimizer": {"device": "cpu",
                       "pin_memory": true, "pipeline_read": true, "fast_init": false}})",
                   "adam"},
        GoodConfig{R"({"optimizer": {"type": "Lion"}, "sub_group_size": 1e9,
                       "offload_optimizer": {"device": "NVMe", "nvme_path": "/tmp",
                       "buffer_count": 2, "pipeline_write": true, "ratio": 1}})",
                   "lion"},
        GoodConfig{R"({"optimizer": {"type": "Adam"}, "offload_param": {"device": "cpu",
                       "pin_memory": true, "buffer_count": 5, "max_in_cpu": 1e9}})",
                   "adam"},
        GoodConfig{R"({"optimizer": {"type": "Adam"}, "offload_param": {"device": "nvme",
                       "nvme_path": "/tmp", "buffer_count": 4, "buffer_size": 1e8}})",
                   "adam"}));

TEST(OffloadPlugin, DescriptorIsAnOffloadPlugin) {
  const strata_plugin_descriptor& d = offload_library().descriptor();
  EXPECT_EQ(d.abi_major, static_cast<uint32_t>(STRATA_ABI_MAJOR));
  EXPECT_EQ(d.kind, STRATA_PLUGIN_OFFLOAD);
  // ABI 1.3: the descriptor's minor is the plugin's floor; the table's header says what it holds.
  EXPECT_GE(d.min_runtime_minor, static_cast<uint32_t>(STRATA_ABI_MINOR_TABLES));
  EXPECT_LE(d.min_runtime_minor, static_cast<uint32_t>(STRATA_ABI_MINOR));
  EXPECT_EQ(offload_ops().header.struct_size, sizeof(strata_offload_ops));
  EXPECT_EQ(offload_ops().header.abi_major, static_cast<uint32_t>(STRATA_ABI_MAJOR));
  EXPECT_EQ(offload_ops().header.built_minor, static_cast<uint32_t>(STRATA_ABI_MINOR));
  EXPECT_EQ(offload_ops().header.kind, STRATA_PLUGIN_OFFLOAD);
}

}  // namespace
}  // namespace strata::test
