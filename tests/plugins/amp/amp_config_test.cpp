// strata_amp's config validation (DeepSpeed's fp16/bf16 keys, dtype, threads) and its fp32
// behaviour (query, loss_scale, update).
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <utility>

#include "optim_harness.hpp"

namespace strata::test {
namespace {

struct AmpConfigCase {
  std::string name;
  std::string config;
  strata_status status;
  std::string expected;  // substring of the message; empty for success
};

void PrintTo(const AmpConfigCase& c, std::ostream* os) { *os << c.name << " " << c.config; }

class AmpConfig : public ::testing::TestWithParam<AmpConfigCase> {};

TEST_P(AmpConfig, StatusAndMessage) {
  const AmpConfigCase& c = GetParam();
  FakeHost host;
  Instance<strata_precision_ops> amp(amp_ops(), host, c.config);
  EXPECT_EQ(amp.status(), c.status) << amp.message();
  EXPECT_NE(amp.message().find(c.expected), std::string::npos)
      << "message: " << amp.message() << "\nexpected to contain: " << c.expected;
  EXPECT_EQ(amp.self() != nullptr, c.status == STRATA_OK);
}

INSTANTIATE_TEST_SUITE_P(
    Amp, AmpConfig,
    ::testing::Values(
        AmpConfigCase{"Empty", "{}", STRATA_OK, ""},
        AmpConfigCase{"BothDisabled", R"({"fp16": {"enabled": false}, "bf16": {"enabled": false}})",
                      STRATA_OK, ""},
        AmpConfigCase{"DisabledWithScalerKeys",
                      R"({"fp16": {"enabled": false, "loss_scale": 0, "hysteresis": 2}})",
                      STRATA_OK, ""},
        AmpConfigCase{"NoEnabledKey", R"({"bf16": {}})", STRATA_OK, ""},
        AmpConfigCase{"Fp16Enabled", R"({"fp16": {"enabled": true}})", STRATA_OK, ""},
        AmpConfigCase{"Bf16Enabled", R"({"bf16": {"enabled": true}, "fp16": {"enabled": false}})",
                      STRATA_OK, ""},
        AmpConfigCase{"EveryDeepSpeedFp16Key",
                      R"({"fp16": {"enabled": true, "auto_cast": false, "loss_scale": 0,
                          "initial_scale_power": 12, "loss_scale_window": 500, "hysteresis": 3,
                          "consecutive_hysteresis": true, "min_loss_scale": 0.25,
                          "fp16_master_weights_and_grads": false}})",
                      STRATA_OK, ""},
        AmpConfigCase{"EveryDeepSpeedBf16Key",
                      R"({"bf16": {"enabled": true, "immediate_grad_update": false,
                          "check_grad_overflow": true, "bf16_master_weights_and_grads": false,
                          "bf16_optimizer_states": false}})",
                      STRATA_OK, ""},
        // Pydantic coerces numeric strings and integral floats; so do we.
        AmpConfigCase{"NumbersAsStringsAndIntegralFloats",
                      R"({"fp16": {"enabled": true, "loss_scale": "0", "loss_scale_window": 1000.0,
                          "initial_scale_power": "8"}})",
                      STRATA_OK, ""},
        // The dynamic scaler's ranges only matter when it runs (as in DeepSpeed).
        AmpConfigCase{"StaticScaleIgnoresDynamicRanges",
                      R"({"fp16": {"enabled": true, "loss_scale": 1024, "loss_scale_window": 0}})",
                      STRATA_OK, ""},
        AmpConfigCase{"DtypeAgreesWithBlock",
                      R"({"dtype": "fp16", "fp16": {"enabled": true}, "bf16": {"enabled": false}})",
                      STRATA_OK, ""},
        AmpConfigCase{"Threads", R"({"threads": 3})", STRATA_OK, ""},
        AmpConfigCase{"BothEnabled", R"({"fp16": {"enabled": true}, "bf16": {"enabled": true}})",
                      STRATA_ERR_INVALID_ARGUMENT,
                      "fp16.enabled and bf16.enabled are both true; choose one"},
        AmpConfigCase{
            "NegativeLossScale", R"({"fp16": {"enabled": true, "loss_scale": -1}})",
            STRATA_ERR_INVALID_ARGUMENT,
            "fp16.loss_scale: expected a finite number >= 0 (0 = dynamic scaling), got -1"},
        AmpConfigCase{"NegativeLossScaleInADisabledBlock",
                      R"({"fp16": {"enabled": false, "loss_scale": -0.5}})",
                      STRATA_ERR_INVALID_ARGUMENT, "fp16.loss_scale: expected a finite number"},
        AmpConfigCase{
            "InfiniteLossScale", R"({"fp16": {"enabled": true, "loss_scale": "inf"}})",
            STRATA_ERR_INVALID_ARGUMENT,
            R"(fp16.loss_scale: expected a finite number >= 0 (0 = dynamic scaling), got "inf")"},
        AmpConfigCase{"NanLossScale", R"({"fp16": {"enabled": true, "loss_scale": "NaN"}})",
                      STRATA_ERR_INVALID_ARGUMENT, R"(fp16.loss_scale: expected a finite number)"},
        AmpConfigCase{
            "LossScaleNotANumber", R"({"fp16": {"loss_scale": true}})", STRATA_ERR_INVALID_ARGUMENT,
            "fp16.loss_scale: expected a finite number >= 0 (0 = dynamic scaling), got true"},
        AmpConfigCase{
            "ZeroWindow", R"({"fp16": {"enabled": true, "loss_scale_window": 0}})",
            STRATA_ERR_INVALID_ARGUMENT,
            "fp16.loss_scale_window: expected an integer >= 1 with dynamic loss scaling, got 0"},
        AmpConfigCase{"NegativeWindow", R"({"fp16": {"enabled": true, "loss_scale_window": -5}})",
                      STRATA_ERR_INVALID_ARGUMENT,
                      "fp16.loss_scale_window: expected an integer >= 1"},
        AmpConfigCase{
            "FractionalWindow", R"({"fp16": {"loss_scale_window": 2.5}})",
            STRATA_ERR_INVALID_ARGUMENT,
            "fp16.loss_scale_window: expected an integer >= 1 with dynamic loss scaling, got 2.5"},
        AmpConfigCase{"ZeroHysteresis", R"({"fp16": {"enabled": true, "hysteresis": 0}})",
                      STRATA_ERR_INVALID_ARGUMENT,
                      "fp16.hysteresis: expected an integer >= 1, got 0"},
        AmpConfigCase{"ZeroMinLossScale", R"({"fp16": {"enabled": true, "min_loss_scale": 0}})",
                      STRATA_ERR_INVALID_ARGUMENT,
                      "fp16.min_loss_scale: expected a finite number > 0, got 0"},
        AmpConfigCase{"NegativeMinLossScale",
                      R"({"fp16": {"enabled": true, "min_loss_scale": -2}})",
                      STRATA_ERR_INVALID_ARGUMENT,
                      "fp16.min_loss_scale: expected a finite number > 0, got -2"},
        // The dynamic scale starts at 2^initial_scale_power and only lowers to min_loss_scale.
        AmpConfigCase{"MinLossScaleAboveInitialScale",
                      R"({"fp16": {"enabled": true, "initial_scale_power": 4, "min_loss_scale": 32}})",
                      STRATA_ERR_INVALID_ARGUMENT,
                      "fp16.min_loss_scale: 32 is above the initial loss scale 16 "
                      "(2^fp16.initial_scale_power, initial_scale_power = 4); expected "
                      "min_loss_scale <= 2^initial_scale_power"},
        AmpConfigCase{"DefaultMinLossScaleAboveSmallInitialScale",
                      R"({"fp16": {"enabled": true, "initial_scale_power": -2}})",
                      STRATA_ERR_INVALID_ARGUMENT,
                      "fp16.min_loss_scale: 1 (its default) is above the initial loss scale 0.25 "
                      "(2^fp16.initial_scale_power, initial_scale_power = -2)"},
        AmpConfigCase{"MinLossScaleEqualToInitialScale",
                      R"({"fp16": {"enabled": true, "initial_scale_power": 4, "min_loss_scale": 16}})",
                      STRATA_OK, ""},
        // A static scale never moves, so DeepSpeed never reads min_loss_scale: neither do we.
        AmpConfigCase{"StaticScaleIgnoresMinLossScale",
                      R"({"fp16": {"enabled": true, "loss_scale": 8, "min_loss_scale": 1024}})",
                      STRATA_OK, ""},
        AmpConfigCase{"DisabledIgnoresMinLossScale",
                      R"({"fp16": {"enabled": false, "min_loss_scale": 1e9}})", STRATA_OK, ""},
        AmpConfigCase{
            "ScalePowerOutOfRange", R"({"fp16": {"enabled": true, "initial_scale_power": 200}})",
            STRATA_ERR_INVALID_ARGUMENT,
            "fp16.initial_scale_power: expected an integer from -126 to 127 (2^power must be "
            "a normal fp32 value), got 200"},
        AmpConfigCase{"ConsecutiveNotBool", R"({"fp16": {"consecutive_hysteresis": 1}})",
                      STRATA_ERR_INVALID_ARGUMENT,
                      "fp16.consecutive_hysteresis: expected true or false, got 1"},
        AmpConfigCase{
            "UnknownFp16Key", R"({"fp16": {"enabled": true, "loss_scael": 0}})",
            STRATA_ERR_INVALID_ARGUMENT,
            "fp16.loss_scael: unknown key; expected one of enabled, auto_cast, loss_scale"},
        AmpConfigCase{"UnknownBf16Key", R"({"bf16": {"enabled": true, "loss_scale": 0}})",
                      STRATA_ERR_INVALID_ARGUMENT,
                      "bf16.loss_scale: unknown key; expected one of enabled"},
        AmpConfigCase{"EnabledNotBool", R"({"fp16": {"enabled": "auto"}})",
                      STRATA_ERR_INVALID_ARGUMENT,
                      R"(fp16.enabled: expected true or false, got "auto")"},
        AmpConfigCase{"Bf16EnabledNumber", R"({"bf16": {"enabled": 1}})",
                      STRATA_ERR_INVALID_ARGUMENT, "bf16.enabled: expected true or false, got 1"},
        AmpConfigCase{"BlockNotObject", R"({"fp16": true})", STRATA_ERR_INVALID_ARGUMENT,
                      "fp16: expected an object, got true"},
        AmpConfigCase{"UnknownPrecisionName", R"({"dtype": "fp8"})", STRATA_ERR_INVALID_ARGUMENT,
                      R"(dtype: expected "fp32", "fp16" or "bf16", got "fp8")"},
        AmpConfigCase{"PrecisionNameNotAString", R"({"dtype": 16})", STRATA_ERR_INVALID_ARGUMENT,
                      R"(dtype: expected "fp32", "fp16" or "bf16", got 16)"},
        AmpConfigCase{"DtypeContradictsBlock", R"({"dtype": "bf16", "fp16": {"enabled": true}})",
                      STRATA_ERR_INVALID_ARGUMENT,
                      R"(dtype: "bf16" contradicts fp16.enabled = true)"},
        AmpConfigCase{
            "DtypeContradictsDisabledBlock", R"({"dtype": "fp16", "fp16": {"enabled": false}})",
            STRATA_ERR_INVALID_ARGUMENT, R"(dtype: "fp16" contradicts fp16.enabled = false)"},
        AmpConfigCase{
            "NegativeThreads", R"({"threads": -1})", STRATA_ERR_INVALID_ARGUMENT,
            "threads: expected an integer from 0 to 1024 (0 = this rank's share of the hardware "
            "threads), got -1"},
        AmpConfigCase{"UnknownKey", R"({"fp8": {"enabled": true}})", STRATA_ERR_INVALID_ARGUMENT,
                      "fp8: unknown key in the precision config"},
        AmpConfigCase{"NotJson", "{fp16", STRATA_ERR_INVALID_ARGUMENT, "config: not valid JSON"}),
    [](const auto& info) { return info.param.name; });

TEST(AmpFp32, QueryLossScaleAndUpdate) {
  FakeHost host;
  Instance<strata_precision_ops> amp(amp_ops(), host, R"({"fp16": {"enabled": false}})");
  ASSERT_EQ(amp.status(), STRATA_OK) << amp.message();
  strata_error err = sdk::make_error();
  strata_precision_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.model_dtype = -1;
  caps.dynamic_scaling = -1;
  ASSERT_EQ(amp.ops().query(amp.self(), &caps, &err), STRATA_OK) << err.message;
  EXPECT_EQ(caps.model_dtype, STRATA_F32);
  EXPECT_EQ(caps.dynamic_scaling, 0);

  double scale = 0.0;
  ASSERT_EQ(amp.ops().loss_scale(amp.self(), &scale, &err), STRATA_OK) << err.message;
  EXPECT_EQ(scale, 1.0);
  EXPECT_EQ(amp.ops().update(amp.self(), 1, &err), STRATA_OK) << err.message;
  EXPECT_EQ(amp.ops().update(amp.self(), 0, &err), STRATA_OK) << err.message;
  ASSERT_EQ(amp.ops().loss_scale(amp.self(), &scale, &err), STRATA_OK) << err.message;
  EXPECT_EQ(scale, 1.0) << "fp32 never rescales";
}

// DeepSpeed's and torch's other names for the formats pick the same model dtype through the
// plugin (the message lists only the canonical names).
TEST(AmpDtypeNames, EverySpellingPicksItsFormat) {
  const std::pair<const char*, int32_t> spellings[] = {
      {"fp32", STRATA_F32}, {"float32", STRATA_F32}, {"fp16", STRATA_F16},
      {"float16", STRATA_F16}, {"half", STRATA_F16}, {"bf16", STRATA_BF16},
      {"bfloat16", STRATA_BF16}};
  for (const auto& [name, dtype] : spellings) {
    SCOPED_TRACE(name);
    FakeHost host;
    Instance<strata_precision_ops> amp(amp_ops(), host,
                                       std::string(R"({"dtype": ")") + name + R"("})");
    ASSERT_EQ(amp.status(), STRATA_OK) << amp.message();
    strata_error err = sdk::make_error();
    strata_precision_caps caps{};
    caps.struct_size = sizeof(caps);
    caps.model_dtype = -1;
    ASSERT_EQ(amp.ops().query(amp.self(), &caps, &err), STRATA_OK) << err.message;
    EXPECT_EQ(caps.model_dtype, dtype);
  }
}

// Integer keys written as strings (pydantic coerces them) reach the scaler as numbers.
TEST(AmpNumberStrings, InitialScalePowerAsAStringSetsTheScale) {
  FakeHost host;
  Instance<strata_precision_ops> amp(
      amp_ops(), host, R"({"fp16": {"enabled": true, "initial_scale_power": "5"}})");
  ASSERT_EQ(amp.status(), STRATA_OK) << amp.message();
  strata_error err = sdk::make_error();
  double scale = 0.0;
  ASSERT_EQ(amp.ops().loss_scale(amp.self(), &scale, &err), STRATA_OK) << err.message;
  EXPECT_EQ(scale, 32.0);
}

TEST(AmpPlugin, DescriptorIsAPrecisionPlugin) {
  const strata_plugin_descriptor& d = amp_library().descriptor();
  EXPECT_EQ(d.abi_major, static_cast<uint32_t>(STRATA_ABI_MAJOR));
  EXPECT_EQ(d.kind, STRATA_PLUGIN_PRECISION);
  // ABI 1.3: the descriptor's minor is the plugin's floor; the table's header says what it holds.
  EXPECT_GE(d.min_runtime_minor, static_cast<uint32_t>(STRATA_ABI_MINOR_TABLES));
  EXPECT_LE(d.min_runtime_minor, static_cast<uint32_t>(STRATA_ABI_MINOR));
  EXPECT_EQ(amp_ops().header.struct_size, sizeof(strata_precision_ops));
  EXPECT_EQ(amp_ops().header.abi_major, static_cast<uint32_t>(STRATA_ABI_MAJOR));
  EXPECT_EQ(amp_ops().header.built_minor, static_cast<uint32_t>(STRATA_ABI_MINOR));
  EXPECT_EQ(amp_ops().header.kind, STRATA_PLUGIN_PRECISION);
}

}  // namespace
}  // namespace strata::test
