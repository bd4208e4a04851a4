// LossScaler against DeepSpeed's rules (deepspeed/runtime/fp16/loss_scaler.py,
// DynamicLossScaler.update_scale), compiled straight from the plugin's source. Every expected
// trajectory below was worked out by hand from those rules, step by step, in the comments:
//   overflow: if hysteresis == 1 or counter == 1: raise if scale == min, else scale = max(scale/2,
//   min)
//             else counter -= 1;   then last_overflow = iter
//   clean:    if consecutive: counter = hysteresis
//             stable = iter - last_overflow - 1 (last_overflow starts at -1)
//             if stable > 0 and stable % window == 0: (if not consecutive: counter = hysteresis),
//                                                     scale *= 2
//   iter += 1 (not reached when it raises)
#include "loss_scaler.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::amp {
namespace {

struct Trajectory {
  std::string name;
  LossScalerConfig config;
  std::string steps;             // 'O' overflow, '.' clean, one update each
  std::vector<double> scales;    // scale after each update that returned normally
  std::vector<long> hysteresis;  // counter after each update (empty: not checked)
  long fails_at = 0;             // 1-based update that hits the minimum (0: none)
};

void PrintTo(const Trajectory& t, std::ostream* os) { *os << t.name << " " << t.steps; }

LossScalerConfig dynamic(double initial, long window, long hysteresis, bool consecutive,
                         double min_scale) {
  LossScalerConfig c;
  c.initial_scale = initial;
  c.window = window;
  c.hysteresis = hysteresis;
  c.consecutive_hysteresis = consecutive;
  c.min_scale = min_scale;
  return c;
}

LossScalerConfig fixed(double scale) {
  LossScalerConfig c;
  c.static_scale = scale;
  return c;
}

class LossScalerTable : public ::testing::TestWithParam<Trajectory> {};

TEST_P(LossScalerTable, FollowsDeepSpeedStepByStep) {
  const Trajectory& t = GetParam();
  LossScaler scaler(t.config);
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const ScaleChange change = scaler.update(t.steps[i] == 'O');
    if (t.fails_at != 0 && static_cast<long>(i) + 1 == t.fails_at) {
      EXPECT_EQ(change, ScaleChange::at_minimum) << "update " << i + 1;
      EXPECT_EQ(scaler.scale(), t.config.min_scale) << "the failing update leaves the scale";
      return;
    }
    ASSERT_NE(change, ScaleChange::at_minimum) << "update " << i + 1;
    ASSERT_LT(i, t.scales.size()) << "table row too short";
    EXPECT_EQ(scaler.scale(), t.scales[i])
        << "after update " << i + 1 << " ('" << t.steps[i] << "')";
    if (!t.hysteresis.empty()) {
      EXPECT_EQ(scaler.hysteresis_left(), t.hysteresis[i]) << "after update " << i + 1;
    }
  }
  EXPECT_EQ(t.fails_at, 0) << "expected the minimum to be hit";
  EXPECT_EQ(scaler.steps(), t.steps.size());
}

INSTANTIATE_TEST_SUITE_P(
    DeepSpeedRules, LossScalerTable,
    ::testing::Values(
        // i0 O: counter 2->1, scale stays. i1 O: counter is 1 -> 32768, and the counter is not
        // refilled by halving, so i2 and i3 halve again.
        Trajectory{"DefaultHysteresisAbsorbsOneOverflow",
                   dynamic(65536, 1000, 2, false, 1),
                   "OOOO",
                   {65536, 32768, 16384, 8192},
                   {1, 1, 1, 1}},
        // stable = iter (no overflow yet): doubles at iter 3 and 6 (stable 3, 6).
        Trajectory{"WindowDoublesAfterCleanSteps",
                   dynamic(4, 3, 1, false, 1),
                   ".......",
                   {4, 4, 4, 8, 8, 8, 16},
                   {}},
        // i2 O -> 4, last = 2. i3 stable 0, i4 1, i5 2 -> 8, i6 3, i7 4 -> 16.
        Trajectory{"OverflowRestartsTheWindow",
                   dynamic(8, 2, 1, false, 1),
                   "..O.....",
                   {8, 8, 4, 4, 4, 8, 8, 16},
                   {}},
        // i0 O 3->2. i1 clean, stable 0: no refill. i2 O 2->1. i3 stable 0. i4 O -> 512.
        // i5 O -> 256.
        Trajectory{"HysteresisRefillsOnlyAtTheWindow",
                   dynamic(1024, 2, 3, false, 1),
                   "O.O.OO",
                   {1024, 1024, 1024, 1024, 512, 256},
                   {2, 2, 1, 1, 1, 1}},
        // Every clean step refills to 3: i0 2, i1 3, i2 2, i3 3, i4 2, i5 1, i6 O at 1 -> 512.
        Trajectory{"ConsecutiveHysteresisRefillsOnEveryCleanStep",
                   dynamic(1024, 2, 3, true, 1),
                   "O.O.OOO",
                   {1024, 1024, 1024, 1024, 1024, 1024, 512},
                   {2, 3, 2, 3, 2, 1, 1}},
        // i0 O 2->1. i1 O -> 8, last 1. i2 stable 0, i3 1, i4 2: refill to 2 and -> 16.
        // i5 O 2->1. i6 O -> 8.
        Trajectory{"WindowRefillsHysteresis",
                   dynamic(16, 2, 2, false, 1),
                   "OO...OO",
                   {16, 8, 8, 8, 16, 16, 8},
                   {1, 1, 1, 1, 2, 1, 1}},
        // Consecutive: i0 O 2->1, i1-i3 refill to 2, i3 stable 2 -> 8. i4 O 2->1. i5 O -> 4.
        Trajectory{"ConsecutiveHysteresisWithWindow",
                   dynamic(4, 2, 2, true, 1),
                   "O...OO",
                   {4, 4, 4, 8, 8, 4},
                   {1, 2, 2, 2, 1, 1}},
        // Window 1: i0 stable 0, i1 stable 1 -> 2, i2 stable 2 -> 4.
        Trajectory{"WindowOfOneDoublesFromTheSecondStep",
                   dynamic(1, 1, 2, false, 1),
                   "...",
                   {1, 2, 4},
                   {}},
        // max(8/2, 3) = 4, max(4/2, 3) = 3, then 3 == min: DeepSpeed raises at update 3.
        Trajectory{
            "ClampsToTheMinimumThenStops", dynamic(8, 1000, 1, false, 3), "OOO", {4, 3}, {}, 3},
        // i0 O 2->1 (scale 2). i1 O -> max(1, 1) = 1. i2 O at the minimum: raises at update 3.
        Trajectory{"MinimumReachedThroughHysteresis",
                   dynamic(2, 1000, 2, false, 1),
                   "OOO",
                   {2, 1},
                   {1, 1},
                   3},
        // The minimum check sits inside the halving branch: at scale == min, i0 O only uses the
        // hysteresis; i1 O raises.
        Trajectory{
            "HysteresisStillAbsorbsAtTheMinimum", dynamic(1, 1000, 2, false, 1), "OO", {1}, {1}, 2},
        // i0 O -> 1, last 0. i1 stable 0. i2 stable 1 -> 2. i3 O -> 1. i4 O at 1: raises.
        Trajectory{"RecoversFromTheMinimumThenStops",
                   dynamic(2, 1, 1, false, 1),
                   "O..OO",
                   {1, 1, 2, 1},
                   {},
                   5},
        // An initial scale below the minimum: max(0.5 / 2, 1) = 1 raises it to the minimum.
        Trajectory{"BelowTheMinimumClampsUp", dynamic(0.5, 1000, 1, false, 1), "OO", {1}, {}, 2},
        // DeepSpeed's static LossScaler.update_scale does nothing, and never raises.
        Trajectory{"StaticScaleNeverChanges",
                   fixed(128),
                   "OOO..OOOO",
                   {128, 128, 128, 128, 128, 128, 128, 128, 128},
                   {}}),
    [](const auto& info) { return info.param.name; });

TEST(LossScaler, DefaultsAreDeepSpeeds) {
  const LossScaler scaler{LossScalerConfig{}};
  EXPECT_TRUE(scaler.dynamic());
  EXPECT_EQ(scaler.scale(), 65536.0);  // 2^16
  EXPECT_EQ(scaler.hysteresis_left(), 2);
  EXPECT_FALSE(LossScaler(fixed(8)).dynamic());
}

TEST(LossScaler, DefaultWindowDoublesAfterAThousandCleanSteps) {
  LossScaler scaler{LossScalerConfig{}};
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(scaler.update(false), ScaleChange::kept) << i;
  EXPECT_EQ(scaler.update(false), ScaleChange::doubled);  // iter 1000: stable 1000
  EXPECT_EQ(scaler.scale(), 131072.0);
}

TEST(LossScaler, HistoryKeepsTheLastSixteenUpdates) {
  LossScaler scaler(dynamic(16, 1000, 1, false, 1));
  for (int i = 0; i < 20; ++i) scaler.update(false);  // steps 1-20 at 16 (stable < window)
  // Steps 21-24 halve 16 -> 1; step 25 overflows at the minimum.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(scaler.update(true), ScaleChange::decreased);
  EXPECT_EQ(scaler.update(true), ScaleChange::at_minimum);
  const std::vector<ScaleRecord> h = scaler.history();
  ASSERT_EQ(h.size(), LossScaler::kHistory);
  EXPECT_EQ(h.front().step, 10u);
  EXPECT_EQ(h.front().scale, 16.0);
  EXPECT_FALSE(h.front().overflow);
  const double attempted[] = {16, 8, 4, 2, 1};
  for (int k = 0; k < 5; ++k) {
    const ScaleRecord& r = h[h.size() - 5 + static_cast<std::size_t>(k)];
    EXPECT_EQ(r.step, 21u + static_cast<unsigned>(k));
    EXPECT_EQ(r.scale, attempted[k]);
    EXPECT_TRUE(r.overflow);
  }
  const std::string text = scaler.history_text();
  EXPECT_EQ(text.rfind("(10, 16, ok) (11, 16, ok)", 0), 0u) << text;
  EXPECT_NE(text.find("(24, 2, overflow) (25, 1, overflow)"), std::string::npos) << text;
}

// A checkpoint's view (ABI 1.6): state() restored into a fresh scaler mid-sequence continues
// exactly as the original, consecutive hysteresis or not; bad values are refused untouched.
TEST(LossScalerState, RestoredMidSequenceContinuesIdentically) {
  const std::string steps = "..O.O...OO.....O.O.O....OOO......";
  for (bool consecutive : {false, true}) {
    const LossScalerConfig config = dynamic(256.0, 3, 3, consecutive, 1.0);
    for (size_t cut = 0; cut <= steps.size(); cut += 4) {
      LossScaler whole(config);
      for (size_t i = 0; i < cut; ++i) whole.update(steps[i] == 'O');
      LossScaler resumed(config);
      resumed.restore(whole.state());
      EXPECT_EQ(resumed.history_text(), whole.history_text());
      for (size_t i = cut; i < steps.size(); ++i) {
        const ScaleChange a = whole.update(steps[i] == 'O');
        const ScaleChange b = resumed.update(steps[i] == 'O');
        ASSERT_EQ(a, b) << "update " << i + 1 << " after a cut at " << cut;
        ASSERT_EQ(resumed.scale(), whole.scale()) << "update " << i + 1;
        ASSERT_EQ(resumed.hysteresis_left(), whole.hysteresis_left()) << "update " << i + 1;
      }
      EXPECT_EQ(resumed.steps(), whole.steps());
    }
  }
}

TEST(LossScalerState, RestoreRefusesValuesUpdateCannotContinueFrom) {
  LossScaler scaler(dynamic(256.0, 3, 2, false, 1.0));
  scaler.update(true);
  const std::string before = scaler.history_text();
  LossScalerState bad = scaler.state();
  bad.scale = 0.0;
  EXPECT_THROW(scaler.restore(bad), std::invalid_argument);
  bad = scaler.state();
  bad.hysteresis = 0;
  EXPECT_THROW(scaler.restore(bad), std::invalid_argument);
  bad = scaler.state();
  bad.last_overflow = bad.iteration;
  EXPECT_THROW(scaler.restore(bad), std::invalid_argument);
  EXPECT_EQ(scaler.history_text(), before);
  EXPECT_EQ(scaler.hysteresis_left(), 1);
}

}  // namespace
}  // namespace strata::amp
