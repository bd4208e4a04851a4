// The step pipeline through the host C API with the real plugins: what one optimizer step does to
// parameters and gradients, clipping, accumulation, skipped steps, the memory report, misuse.
#include <strata/strata.h>

#include <gtest/gtest.h>

#include "c_runtime.hpp"

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace {

std::string manifest(const std::string& optimizer, const std::string& extra = "") {
  return R"({"train_micro_batch_size_per_gpu": 1, "optimizer": )" + optimizer + extra + "}";
}
const char* kSgd = R"({"type": "SGD", "params": {"lr": 0.1}})";

struct Runtime : strata_test::CRuntime {
  using CRuntime::CRuntime;
  uint32_t add(const char* name, std::vector<float>& data, std::vector<float>& grad) {
    strata_param_desc d{sizeof(d), name, STRATA_F32, {STRATA_DEVICE_HOST, 0}, data.size(),
                        data.data(), grad.data()};
    uint32_t index = 0;
    EXPECT_EQ(strata_register_param(rt, &d, &index, &err), STRATA_OK) << err.message;
    return index;
  }
};

TEST(Engine, SgdStepAppliesUpdateAndZeroesGradients) {
  Runtime r(manifest(kSgd));
  std::vector<float> w = {1, 2, 3}, gw(3), b = {0.5f}, gb(1);
  r.add("w", w, gw);
  r.add("b", b, gb);
  ASSERT_EQ(strata_finalize(r.rt, &r.err), STRATA_OK) << r.err.message;
  gw = {0.5f, -1.0f, 2.0f};
  gb = {2.0f};
  const strata_step_result s = r.step();
  EXPECT_EQ(s.outcome, STRATA_STEP_APPLIED);
  EXPECT_EQ(s.global_steps, 1u);
  EXPECT_NEAR(s.grad_norm, std::sqrt(0.25 + 1 + 4 + 4), 1e-6);
  EXPECT_FLOAT_EQ(w[0], 1 - 0.1f * 0.5f);
  EXPECT_FLOAT_EQ(w[1], 2 + 0.1f);
  EXPECT_FLOAT_EQ(w[2], 3 - 0.2f);
  EXPECT_FLOAT_EQ(b[0], 0.5f - 0.2f);
  for (float g : gw) EXPECT_EQ(g, 0.0f);
  EXPECT_EQ(gb[0], 0.0f);
}

TEST(Engine, GradientClippingScalesTheUpdateToTheClipNorm) {
  Runtime r(manifest(kSgd, R"(, "gradient_clipping": 1.0)"));
  std::vector<float> w = {0, 0}, gw(2);
  r.add("w", w, gw);
  ASSERT_EQ(strata_finalize(r.rt, &r.err), STRATA_OK) << r.err.message;
  gw = {3.0f, 4.0f};  // norm 5 → clipped to 1
  const strata_step_result s = r.step();
  EXPECT_NEAR(s.grad_norm, 5.0, 1e-9);  // reported before clipping
  EXPECT_NEAR(w[0], -0.1 * 3.0 / (5.0 + 1e-6), 1e-7);
  EXPECT_NEAR(w[1], -0.1 * 4.0 / (5.0 + 1e-6), 1e-7);
}

TEST(Engine, AccumulatesUntilTheBoundary) {
  Runtime r(manifest(kSgd, R"(, "gradient_accumulation_steps": 2)"));
  std::vector<float> w = {1}, gw(1);
  r.add("w", w, gw);
  ASSERT_EQ(strata_finalize(r.rt, &r.err), STRATA_OK) << r.err.message;
  strata_training_info t{};
  t.struct_size = sizeof(t);
  ASSERT_EQ(strata_training(r.rt, &t), STRATA_OK);
  EXPECT_EQ(t.gradient_accumulation_steps, 2u);
  EXPECT_EQ(t.train_batch_size, 2u);
  gw[0] += 1.0f;
  EXPECT_EQ(r.step().outcome, STRATA_STEP_ACCUMULATED);
  EXPECT_EQ(w[0], 1.0f);
  EXPECT_EQ(gw[0], 1.0f);  // kept for accumulation
  gw[0] += 3.0f;
  const strata_step_result s = r.step();
  EXPECT_EQ(s.outcome, STRATA_STEP_APPLIED);
  EXPECT_FLOAT_EQ(w[0], 1.0f - 0.1f * 4.0f);
  EXPECT_EQ(gw[0], 0.0f);
}

TEST(Engine, NonFiniteGradientSkipsTheStepAndCountsIt) {
  Runtime r(manifest(kSgd));
  std::vector<float> w = {1, 2}, gw(2);
  r.add("w", w, gw);
  ASSERT_EQ(strata_finalize(r.rt, &r.err), STRATA_OK) << r.err.message;
  gw = {NAN, 1.0f};
  const strata_step_result s = r.step();
  EXPECT_EQ(s.outcome, STRATA_STEP_SKIPPED);
  EXPECT_EQ(s.skipped_steps, 1u);
  EXPECT_EQ(s.global_steps, 1u);
  EXPECT_EQ(w[0], 1.0f);
  EXPECT_EQ(w[1], 2.0f);
  EXPECT_EQ(gw[1], 0.0f);
  gw = {1.0f, 1.0f};
  EXPECT_EQ(r.step().outcome, STRATA_STEP_APPLIED);
  EXPECT_FLOAT_EQ(w[0], 0.9f);
}

TEST(Engine, MemoryReportCountsModelStateExactly) {
  Runtime r(manifest(R"({"type": "Adam", "params": {"lr": 0.001}})"));
  std::vector<float> w(1000), gw(1000), b(24), gb(24);
  r.add("w", w, gw);
  r.add("b", b, gb);
  ASSERT_EQ(strata_finalize(r.rt, &r.err), STRATA_OK) << r.err.message;
  strata_memory_report m{};
  m.struct_size = sizeof(m);
  ASSERT_EQ(strata_memory(r.rt, &m), STRATA_OK);
  EXPECT_EQ(m.current[STRATA_MEM_PARAMS], 1024u * 4);
  EXPECT_EQ(m.current[STRATA_MEM_GRADS], 1024u * 4);
  EXPECT_EQ(m.current[STRATA_MEM_MASTER], 0u);  // stage 0 fp32: the parameters are the master
  EXPECT_EQ(m.current[STRATA_MEM_OPTIMIZER_STATE], 1024u * 4 * 2);  // Adam: m and v
}

TEST(Engine, MisuseIsRefusedWithAMessage) {
  Runtime r(manifest(kSgd));
  std::vector<float> w = {1}, gw(1), h(2, 0.0f), gh(2);
  EXPECT_EQ(strata_grad_ready(r.rt, 0, &r.err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(r.err.message).find("finalize"), std::string::npos);
  r.add("w", w, gw);
  strata_param_desc dup{sizeof(dup), "w", STRATA_F32, {STRATA_DEVICE_HOST, 0}, 2, h.data(), gh.data()};
  EXPECT_EQ(strata_register_param(r.rt, &dup, nullptr, &r.err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(r.err.message).find("'w'"), std::string::npos) << r.err.message;
  ASSERT_EQ(strata_finalize(r.rt, &r.err), STRATA_OK) << r.err.message;
  EXPECT_EQ(strata_grad_ready(r.rt, 7, &r.err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(r.err.message).find("index 7"), std::string::npos) << r.err.message;
  EXPECT_EQ(strata_finalize(r.rt, &r.err), STRATA_ERR_INVALID_ARGUMENT);
}

TEST(Engine, WrongModelDtypeNamesTheParameter) {
  Runtime r(manifest(kSgd));
  std::vector<double> w(4), gw(4);
  strata_param_desc d{sizeof(d), "w64", STRATA_F64, {STRATA_DEVICE_HOST, 0}, 4, w.data(), gw.data()};
  ASSERT_EQ(strata_register_param(r.rt, &d, nullptr, &r.err), STRATA_OK);
  EXPECT_EQ(strata_finalize(r.rt, &r.err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(r.err.message).find("'w64' f64[4] must be f32"), std::string::npos)
      << r.err.message;
}

}  // namespace

// API 1.3: a host struct is accepted from its first released size up; the runtime reads and writes
// only the fields inside it. Below that size: STRATA_ERR_ABI naming the struct and both sizes.
TEST(HostStructSizes, OlderAndNewerSizesAreAcceptedSmallerOnesRefused) {
  Runtime r(manifest(kSgd));
  ASSERT_NE(r.rt, nullptr);

  // A newer host's larger struct: the fields past today's keep what the host put there.
  struct NewerWorld {
    strata_world_info info;
    int64_t appended;
  } newer{};
  newer.info.struct_size = sizeof(newer);
  newer.appended = 77;
  ASSERT_EQ(strata_world(r.rt, &newer.info), STRATA_OK);
  EXPECT_EQ(newer.info.struct_size, sizeof(newer));
  EXPECT_EQ(newer.info.size, 1);
  EXPECT_EQ(newer.appended, 77);

  strata_world_info tiny{};
  tiny.struct_size = sizeof(size_t) + sizeof(int32_t);  // smaller than 1.0's
  EXPECT_EQ(strata_world(r.rt, &tiny), STRATA_ERR_ABI);

  std::vector<float> w = {1}, gw(1);
  // Smaller than 1.0's strata_param_desc: refused, naming the struct and both sizes.
  strata_param_desc d{sizeof(d), "w", STRATA_F32, {STRATA_DEVICE_HOST, 0}, 1, w.data(), gw.data()};
  d.struct_size = offsetof(strata_param_desc, grad);
  EXPECT_EQ(strata_register_param(r.rt, &d, nullptr, &r.err), STRATA_ERR_ABI);
  EXPECT_NE(std::string(r.err.message).find("strata_param_desc.struct_size " +
                                            std::to_string(offsetof(strata_param_desc, grad)) +
                                            " is smaller than " + std::to_string(sizeof(d))),
            std::string::npos)
      << r.err.message;
  r.add("w", w, gw);
  ASSERT_EQ(strata_finalize(r.rt, &r.err), STRATA_OK) << r.err.message;

  // A step result too small is refused before the (collective) step runs; nothing was counted.
  strata_step_result small{};
  small.struct_size = offsetof(strata_step_result, skipped_steps);
  EXPECT_EQ(strata_step(r.rt, &small, &r.err), STRATA_ERR_ABI);
  EXPECT_NE(std::string(r.err.message).find("strata_step_result"), std::string::npos) << r.err.message;
  EXPECT_EQ(r.step().global_steps, 1u);

  // An error record smaller than 1.0's is no record: the call runs (a collective must, or the
  // other ranks would wait for this one) and a failure is returned without a message.
  strata_error short_err{};
  short_err.struct_size = sizeof(size_t);
  short_err.code = 1234;
  EXPECT_EQ(strata_barrier(r.rt, &short_err), STRATA_OK);
  strata_step_result res{};
  res.struct_size = sizeof res;
  EXPECT_EQ(strata_step(r.rt, &res, &short_err), STRATA_OK);
  EXPECT_EQ(res.global_steps, 2u);
  EXPECT_EQ(strata_gather(r.rt, 999, 0, &short_err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(short_err.code, 1234);  // nothing written past the record's struct_size
  EXPECT_EQ(short_err.struct_size, sizeof(size_t));
  EXPECT_EQ(strata_barrier(r.rt, &r.err), STRATA_OK);
}

TEST(HostStructSizes, CreateOptionsSmallerThanTheFirstReleaseAreRefused) {
  const std::string json = manifest(kSgd);
  strata_create_options options{};
  options.struct_size = offsetof(strata_create_options, overrides_json);
  options.manifest_json = json.c_str();
  strata_runtime* rt = nullptr;
  strata_error err{sizeof(strata_error), 0, {}};
  EXPECT_EQ(strata_create(&options, &rt, &err), STRATA_ERR_ABI);
  EXPECT_EQ(rt, nullptr);
  EXPECT_NE(std::string(err.message).find("strata_create_options.struct_size"), std::string::npos)
      << err.message;
}
