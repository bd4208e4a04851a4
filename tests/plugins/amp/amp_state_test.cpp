// strata_amp's checkpoint state (ABI 1.6 save_state/load_state): a loss scaler saved mid-run and
// loaded into a fresh instance scales exactly as the uninterrupted one; the save_state buffer
// protocol; and the texts load_state refuses, leaving the scaler as it was.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "optim_harness.hpp"

namespace strata::test {
namespace {

const char* kDynamic =
    R"({"fp16": {"enabled": true, "initial_scale_power": 10, "loss_scale_window": 3,
                 "hysteresis": 2, "min_loss_scale": 0.25}})";
const char* kStatic = R"({"fp16": {"enabled": true, "loss_scale": 128}})";

class Amp {
 public:
  explicit Amp(const std::string& config) : amp_(amp_ops(), host_, config) {
    EXPECT_EQ(amp_.status(), STRATA_OK) << amp_.message();
  }
  double scale() {
    double s = -1;
    EXPECT_EQ(amp_.ops().loss_scale(amp_.self(), &s, &err_), STRATA_OK) << err_.message;
    return s;
  }
  strata_status update(bool overflow) { return amp_.ops().update(amp_.self(), overflow, &err_); }
  std::string save() {
    size_t length = 0;
    EXPECT_EQ(amp_.ops().save_state(amp_.self(), nullptr, 0, &length, &err_), STRATA_OK)
        << err_.message;
    std::string text(length + 1, '#');
    size_t again = 0;
    EXPECT_EQ(amp_.ops().save_state(amp_.self(), text.data(), text.size(), &again, &err_),
              STRATA_OK)
        << err_.message;
    EXPECT_EQ(again, length);
    EXPECT_EQ(text[length], '\0');
    text.resize(length);
    return text;
  }
  strata_status load(const std::string& text) {
    return amp_.ops().load_state(amp_.self(), text.c_str(), &err_);
  }
  const Instance<strata_precision_ops>& instance() const { return amp_; }
  std::string message() const { return err_.message; }

 private:
  FakeHost host_;
  Instance<strata_precision_ops> amp_;
  strata_error err_ = sdk::make_error();
};

// Overflow flags with runs of clean steps (doublings), single overflows (hysteresis) and
// back-to-back ones (decreases).
std::vector<bool> overflows() {
  std::vector<bool> flags;
  for (int i = 0; i < 60; ++i) flags.push_back((i * 7 + i / 5) % 11 < 3 || i % 13 == 0);
  return flags;
}

// Scales before each update, from update `from` on.
std::vector<double> scales(Amp& amp, const std::vector<bool>& flags, size_t from) {
  std::vector<double> seen;
  for (size_t i = from; i < flags.size(); ++i) {
    seen.push_back(amp.scale());
    EXPECT_EQ(amp.update(flags[i]), STRATA_OK) << amp.message();
  }
  seen.push_back(amp.scale());
  return seen;
}

TEST(AmpState, ResumedScalerMatchesTheUninterruptedOne) {
  const std::vector<bool> flags = overflows();
  for (const char* config : {kDynamic, kStatic}) {
    SCOPED_TRACE(config);
    for (size_t cut : {size_t{0}, size_t{1}, size_t{17}, size_t{30}, size_t{59}}) {
      SCOPED_TRACE("saved after " + std::to_string(cut) + " updates");
      Amp whole(config);
      for (size_t i = 0; i < cut; ++i) ASSERT_EQ(whole.update(flags[i]), STRATA_OK);
      const std::string saved = whole.save();
      Amp resumed(config);
      ASSERT_EQ(resumed.load(saved), STRATA_OK) << resumed.message() << "\n" << saved;
      EXPECT_EQ(resumed.save(), saved);
      EXPECT_EQ(scales(resumed, flags, cut), scales(whole, flags, cut));
      EXPECT_EQ(resumed.save(), whole.save());
    }
  }
}

TEST(AmpState, TextHoldsTheScalerState) {
  Amp amp(kDynamic);
  ASSERT_EQ(amp.update(true), STRATA_OK);  // hysteresis 2 -> 1, scale stays 1024
  const std::string text = amp.save();
  for (const char* part : {R"("dtype":"fp16")", R"("mode":"dynamic")", R"("scale":1024.0)",
                           R"("hysteresis":1)", R"("iteration":1)", R"("last_overflow":0)",
                           R"("window":3)", R"("history":[[1,1024.0,true]])"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " in " << text;
  }
  Amp bf16(R"({"bf16": {"enabled": true}})");
  EXPECT_EQ(bf16.save(), R"({"dtype":"bf16","format":1,"mode":"none"})");
  EXPECT_EQ(bf16.load(bf16.save()), STRATA_OK) << bf16.message();
}

TEST(AmpState, SaveStateReportsTheLengthWhenTheTextDoesNotFit) {
  Amp amp(kDynamic);
  const std::string text = amp.save();
  std::string small(text.size(), '#');  // no room for the NUL
  size_t length = 0;
  strata_error err = sdk::make_error();
  ASSERT_EQ(amp.instance().ops().save_state(amp.instance().self(), small.data(), small.size(),
                                            &length, &err),
            STRATA_OK)
      << err.message;
  EXPECT_EQ(length, text.size());
  EXPECT_EQ(small, std::string(text.size(), '#')) << "written although it did not fit";
  EXPECT_EQ(amp.instance().ops().save_state(amp.instance().self(), nullptr, 8, &length, &err),
            STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(amp.instance().ops().save_state(amp.instance().self(), small.data(), small.size(),
                                            nullptr, &err),
            STRATA_ERR_INVALID_ARGUMENT);
}

TEST(AmpState, RefusesWhatItCannotReadAndKeepsItsScaler) {
  Amp amp(kDynamic);
  ASSERT_EQ(amp.update(true), STRATA_OK);
  const std::string before = amp.save();
  struct Bad {
    std::string text;
    strata_status status;
    std::string message;
  };
  const std::string fp16 = R"("format":1,"dtype":"fp16","mode":"dynamic")";
  const std::vector<Bad> bad = {
      {"not json", STRATA_ERR_INVALID_ARGUMENT, "is not JSON"},
      {"[1, 2]", STRATA_ERR_INVALID_ARGUMENT, "is not a JSON object"},
      {"{}", STRATA_ERR_INVALID_ARGUMENT, "has no \"format\""},
      {R"({"format":2,"dtype":"fp16","mode":"dynamic"})", STRATA_ERR_INVALID_ARGUMENT,
       "this plugin reads format 1"},
      {"{" + fp16 + "}", STRATA_ERR_INVALID_ARGUMENT, "has no \"scale\""},
      {"{" + fp16 + R"(,"scale":"big","hysteresis":2,"iteration":3,"last_overflow":-1})",
       STRATA_ERR_INVALID_ARGUMENT, "\"scale\": expected a number"},
      {"{" + fp16 + R"(,"scale":8.0,"hysteresis":2.5,"iteration":3,"last_overflow":-1})",
       STRATA_ERR_INVALID_ARGUMENT, "\"hysteresis\": expected an integer"},
      {"{" + fp16 + R"(,"scale":-8.0,"hysteresis":2,"iteration":3,"last_overflow":-1})",
       STRATA_ERR_INVALID_ARGUMENT, "scale: expected a finite number > 0"},
      {"{" + fp16 + R"(,"scale":8.0,"hysteresis":2,"iteration":3,"last_overflow":3})",
       STRATA_ERR_INVALID_ARGUMENT, "last_overflow"},
      {"{" + fp16 + R"(,"scale":8.0,"hysteresis":2,"iteration":3,"last_overflow":-1,"history":7})",
       STRATA_ERR_INVALID_ARGUMENT, "\"history\": expected an array"},
      {R"({"format":1,"dtype":"fp16","mode":"static","scale":8.0,"hysteresis":2,"iteration":3,"last_overflow":-1})",
       STRATA_ERR_MISMATCH, "loss scaling \"static\" but this job's is fp16 with loss scaling "
                            "\"dynamic\""},
      {R"({"format":1,"dtype":"bf16","mode":"none"})", STRATA_ERR_MISMATCH,
       "the checkpoint's precision is bf16"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.text);
    EXPECT_EQ(amp.load(b.text), b.status);
    EXPECT_NE(amp.message().find(b.message), std::string::npos) << amp.message();
    EXPECT_NE(amp.message().find("load_state"), std::string::npos) << amp.message();
    EXPECT_EQ(amp.save(), before) << "the scaler changed";
  }
  Amp static_amp(kStatic);
  EXPECT_EQ(static_amp.load(before), STRATA_ERR_MISMATCH);
}

// The job's config rules over the checkpoint's: a smaller hysteresis caps the saved counter, and
// a different static scale is the job's.
TEST(AmpState, TheJobsConfigRules) {
  Amp saved(kDynamic);
  const std::string text = saved.save();  // hysteresis counter 2
  Amp tighter(R"({"fp16": {"enabled": true, "initial_scale_power": 10, "loss_scale_window": 3,
                           "hysteresis": 1, "min_loss_scale": 0.25}})");
  ASSERT_EQ(tighter.load(text), STRATA_OK) << tighter.message();
  ASSERT_EQ(tighter.update(true), STRATA_OK);
  EXPECT_EQ(tighter.scale(), 512.0) << "hysteresis 1: the first overflow halves";

  Amp static128(kStatic);
  const std::string static_text = static128.save();
  Amp static64(R"({"fp16": {"enabled": true, "loss_scale": 64}})");
  ASSERT_EQ(static64.load(static_text), STRATA_OK) << static64.message();
  EXPECT_EQ(static64.scale(), 64.0);
}

}  // namespace
}  // namespace strata::test
