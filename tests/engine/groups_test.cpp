// Parameter groups through the host C API (API 1.1): define_group, gather/release, views, and
// runtime-owned gradients, at ZeRO stages 0 and 3 on one rank with the real plugins.
#include <strata/strata.h>

#include <gtest/gtest.h>

#include "c_runtime.hpp"

#include <string>
#include <vector>

namespace {

std::string manifest(int stage, const std::string& zero_extra = "") {
  return R"({"train_micro_batch_size_per_gpu": 1,
             "optimizer": {"type": "SGD", "params": {"lr": 0.5}},
             "zero_optimization": {"stage": )" +
         std::to_string(stage) + zero_extra + "}}";
}

struct Runtime : strata_test::CRuntime {
  using CRuntime::CRuntime;
  uint32_t add(const char* name, std::vector<float>& data, float* grad = nullptr) {
    strata_param_desc d{sizeof(d), name, STRATA_F32, {STRATA_DEVICE_HOST, 0}, data.size(),
                        data.data(), grad};
    uint32_t index = 0;
    EXPECT_EQ(strata_register_param(rt, &d, &index, &err), STRATA_OK) << err.message;
    return index;
  }
  strata_status group(const char* name, std::vector<uint32_t> params, uint32_t* id = nullptr) {
    return strata_define_group(rt, name, params.data(), params.size(), id, &err);
  }
  strata_param_view view(uint32_t index) {
    strata_param_view v{};
    v.struct_size = sizeof(v);
    EXPECT_EQ(strata_view_param(rt, index, &v, &err), STRATA_OK) << err.message;
    return v;
  }
};

TEST(Groups, DefinitionErrorsNameTheGroupAndParameter) {
  Runtime r(manifest(0));
  std::vector<float> w(4, 1.0f), b(2, 0.0f);
  const uint32_t iw = r.add("w", w), ib = r.add("b", b);
  EXPECT_EQ(r.group("", {iw}), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(r.group("fc", {iw, 7}), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(r.message().find("no parameter with index 7"), std::string::npos) << r.message();
  EXPECT_EQ(r.group("fc", {iw, iw}), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(r.message().find("already in a group"), std::string::npos) << r.message();
  uint32_t id = 99;
  ASSERT_EQ(r.group("fc", {iw, ib}, &id), STRATA_OK) << r.message();
  EXPECT_EQ(id, 0u);
  EXPECT_EQ(r.group("fc", {iw}), STRATA_ERR_INVALID_ARGUMENT);  // same name
  EXPECT_EQ(r.group("other", {ib}), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(r.message().find("'b' f32[2] is already in a group"), std::string::npos)
      << r.message();
  strata_param_view v{};
  v.struct_size = sizeof(v);
  EXPECT_EQ(strata_view_param(r.rt, iw, &v, &r.err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(r.message().find("call strata_finalize first"), std::string::npos) << r.message();
  ASSERT_EQ(strata_finalize(r.rt, &r.err), STRATA_OK) << r.message();
  EXPECT_EQ(r.group("late", {iw}), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(strata_gather(r.rt, 5, 0, &r.err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(r.message().find("no group with id 5 (1 defined)"), std::string::npos) << r.message();
  EXPECT_EQ(strata_gather(r.rt, 0, 8, &r.err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(r.message().find("unknown flags 8"), std::string::npos) << r.message();
}

// Stage 0 with runtime-owned gradients: the view is the host's data and a runtime buffer for the
// gradient, which a step consumes and zeroes.
TEST(Groups, StageZeroLendsPersistentGradientBuffers) {
  Runtime r(manifest(0));
  std::vector<float> w = {1, 2, 3};
  const uint32_t iw = r.add("w", w);
  uint32_t g = 0;
  ASSERT_EQ(r.group("fc", {iw}, &g), STRATA_OK);
  ASSERT_EQ(strata_finalize(r.rt, &r.err), STRATA_OK) << r.message();
  ASSERT_EQ(strata_gather(r.rt, g, STRATA_GATHER_FOR_BACKWARD, &r.err), STRATA_OK) << r.message();
  const strata_param_view v = r.view(iw);
  ASSERT_EQ(v.data, w.data());
  ASSERT_NE(v.grad, nullptr);
  EXPECT_EQ(v.count, 3u);
  auto* grad = static_cast<float*>(v.grad);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(grad[i], 0.0f);
  grad[0] = 1.0f;
  grad[2] = -2.0f;
  ASSERT_EQ(strata_release(r.rt, g, &r.err), STRATA_OK) << r.message();
  strata_step_result s{};
  s.struct_size = sizeof(s);
  ASSERT_EQ(strata_step(r.rt, &s, &r.err), STRATA_OK) << r.message();
  EXPECT_EQ(s.outcome, STRATA_STEP_APPLIED);
  EXPECT_FLOAT_EQ(w[0], 0.5f);
  EXPECT_FLOAT_EQ(w[1], 2.0f);
  EXPECT_FLOAT_EQ(w[2], 4.0f);
  EXPECT_EQ(grad[0], 0.0f);
  EXPECT_EQ(grad[2], 0.0f);
  strata_memory_report m{};
  m.struct_size = sizeof(m);
  ASSERT_EQ(strata_memory(r.rt, &m), STRATA_OK);
  EXPECT_GE(m.current[STRATA_MEM_GRADS], 3 * sizeof(float));  // the runtime's gradient buffer
}

// Stage 3 on one rank: a partitioned parameter is readable only while gathered, its gradient is
// lent for backward, and the step's result shows in the next gather.
TEST(Groups, StageThreeGathersLendsAndForgets) {
  Runtime r(manifest(3, R"(, "stage3_param_persistence_threshold": 0)"));
  std::vector<float> w = {1, 2, 3, 4, 5};
  // After finalize the host's buffer is no longer the parameter (debug builds poison it).
  const std::vector<float> init = w;
  const uint32_t iw = r.add("w", w);
  uint32_t g = 0;
  ASSERT_EQ(r.group("fc", {iw}, &g), STRATA_OK);
  ASSERT_EQ(strata_finalize(r.rt, &r.err), STRATA_OK) << r.message();
  EXPECT_EQ(r.view(iw).data, nullptr);  // partitioned: not readable until gathered
  EXPECT_EQ(r.view(iw).grad, nullptr);

  ASSERT_EQ(strata_gather(r.rt, g, 0, &r.err), STRATA_OK) << r.message();
  strata_param_view v = r.view(iw);
  ASSERT_NE(v.data, nullptr);
  EXPECT_EQ(v.grad, nullptr);  // forward: no gradient buffer
  for (int i = 0; i < 5; ++i) EXPECT_EQ(static_cast<float*>(v.data)[i], init[i]);
  ASSERT_EQ(strata_release(r.rt, g, &r.err), STRATA_OK) << r.message();
  EXPECT_EQ(r.view(iw).data, nullptr);

  ASSERT_EQ(strata_gather(r.rt, g, STRATA_GATHER_FOR_BACKWARD, &r.err), STRATA_OK);
  v = r.view(iw);
  ASSERT_NE(v.grad, nullptr);
  for (int i = 0; i < 5; ++i) static_cast<float*>(v.grad)[i] += float(i);
  ASSERT_EQ(strata_release(r.rt, g, &r.err), STRATA_OK) << r.message();
  strata_step_result s{};
  s.struct_size = sizeof(s);
  ASSERT_EQ(strata_step(r.rt, &s, &r.err), STRATA_OK) << r.message();
  EXPECT_EQ(s.outcome, STRATA_STEP_APPLIED);

  ASSERT_EQ(strata_gather(r.rt, g, 0, &r.err), STRATA_OK) << r.message();
  v = r.view(iw);
  ASSERT_NE(v.data, nullptr);
  for (int i = 0; i < 5; ++i) {
    EXPECT_FLOAT_EQ(static_cast<float*>(v.data)[i], init[i] - 0.5f * float(i)) << i;
  }
  ASSERT_EQ(strata_release(r.rt, g, &r.err), STRATA_OK) << r.message();
}

TEST(Groups, StageThreeRefusesAStepWhileAGroupIsGathered) {
  Runtime r(manifest(3, R"(, "stage3_param_persistence_threshold": 0)"));
  std::vector<float> w = {1, 2};
  const uint32_t iw = r.add("w", w);
  ASSERT_EQ(r.group("fc", {iw}), STRATA_OK);
  ASSERT_EQ(strata_finalize(r.rt, &r.err), STRATA_OK) << r.message();
  ASSERT_EQ(strata_gather(r.rt, 0, 0, &r.err), STRATA_OK) << r.message();
  strata_step_result s{};
  s.struct_size = sizeof(s);
  EXPECT_NE(strata_step(r.rt, &s, &r.err), STRATA_OK);
  EXPECT_NE(r.message().find("'fc'"), std::string::npos) << r.message();
}

}  // namespace
