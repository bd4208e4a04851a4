// strata_amp's config validation and its fp32 behaviour (query, loss_scale, update).
#include <gtest/gtest.h>

#include <ostream>
#include <string>

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
        // A disabled block's other DeepSpeed keys are for later modes; they are not an error.
        AmpConfigCase{"DisabledWithScalerKeys",
                      R"({"fp16": {"enabled": false, "loss_scale": 0, "hysteresis": 2}})",
                      STRATA_OK, ""},
        AmpConfigCase{"NoEnabledKey", R"({"bf16": {}})", STRATA_OK, ""},
        AmpConfigCase{"Fp16Enabled", R"({"fp16": {"enabled": true}})", STRATA_ERR_UNSUPPORTED,
                      "fp16.enabled: true is not available; this build of strata_amp supports "
                      "fp32 only"},
        AmpConfigCase{"Bf16Enabled", R"({"bf16": {"enabled": true}, "fp16": {"enabled": false}})",
                      STRATA_ERR_UNSUPPORTED, "bf16.enabled: true is not available"},
        AmpConfigCase{"BothEnabled", R"({"fp16": {"enabled": true}, "bf16": {"enabled": true}})",
                      STRATA_ERR_INVALID_ARGUMENT,
                      "fp16.enabled and bf16.enabled are both true; choose one"},
        AmpConfigCase{"EnabledNotBool", R"({"fp16": {"enabled": "auto"}})",
                      STRATA_ERR_INVALID_ARGUMENT,
                      R"(fp16.enabled: expected true or false, got "auto")"},
        AmpConfigCase{"Bf16EnabledNumber", R"({"bf16": {"enabled": 1}})",
                      STRATA_ERR_INVALID_ARGUMENT, "bf16.enabled: expected true or false, got 1"},
        AmpConfigCase{"BlockNotObject", R"({"fp16": true})", STRATA_ERR_INVALID_ARGUMENT,
                      "fp16: expected an object, got true"},
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

TEST(AmpPlugin, DescriptorIsAPrecisionPlugin) {
  const strata_plugin_descriptor& d = amp_library().descriptor();
  EXPECT_EQ(d.abi_major, static_cast<uint32_t>(STRATA_ABI_MAJOR));
  EXPECT_EQ(d.kind, STRATA_PLUGIN_PRECISION);
  EXPECT_GE(amp_ops().struct_size, sizeof(strata_precision_ops));
}

}  // namespace
}  // namespace strata::test
