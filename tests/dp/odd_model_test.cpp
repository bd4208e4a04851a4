// The odd-sized test model's backward against central finite differences, and its group
// discipline (one group at a time, every group visited in forward and in backward), without the
// runtime.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "dataset.hpp"
#include "test_model.hpp"

namespace strata::dptest {
namespace {

// Hands out the model's own buffers and records the begin/end sequence.
class RecordingAccess : public GroupAccess {
 public:
  explicit RecordingAccess(TestModel& model) : model_(model), groups_(model.groups()) {}
  GroupBuffers begin(std::size_t group, bool backward) override {
    EXPECT_EQ(open_, -1) << "group " << group << " opened while " << open_ << " is open";
    open_ = static_cast<int>(group);
    trace.push_back((backward ? "B" : "F") + std::to_string(group));
    GroupBuffers b;
    for (std::size_t p : groups_.at(group).params) {
      b.data.push_back(model_.data(p));
      b.grad.push_back(backward ? model_.grad(p) : nullptr);
    }
    return b;
  }
  void end(std::size_t group, bool) override {
    EXPECT_EQ(open_, static_cast<int>(group));
    open_ = -1;
  }
  std::vector<std::string> trace;

 private:
  TestModel& model_;
  std::vector<GroupSpec> groups_;
  int open_ = -1;
};

TEST(OddModel, SizesAreAwkward) {
  auto model = make_odd_model();
  std::vector<std::size_t> counts;
  for (const ParamSpec& p : model->params()) counts.push_back(p.count);
  EXPECT_EQ(counts, (std::vector<std::size_t>{61, 5917, 97, 1261, 13, 91, 7, 1}));
  EXPECT_EQ(model->groups().size(), 4u);
}

TEST(OddModel, BackwardMatchesFiniteDifferences) {
  auto model = make_odd_model();
  model->init(3);
  const std::size_t n = 6;
  const fmnist::Dataset data = fmnist::make_synthetic(n, model->inputs(), model->classes(), 5);
  std::vector<float> x(n * model->inputs());
  std::vector<uint8_t> y(n);
  fmnist::gather_range(data, 0, n, x.data(), y.data());
  RecordingAccess access(*model);
  const auto params = model->params();
  std::vector<std::size_t> ready;
  model->train_batch(access, x.data(), y.data(), n, 1.0f, [&](std::size_t p) { ready.push_back(p); });
  EXPECT_EQ(access.trace, (std::vector<std::string>{"F0", "F1", "F2", "F3", "B3", "B2", "B1", "B0"}));
  EXPECT_EQ(ready.size(), params.size());

  std::vector<std::vector<float>> analytic;
  for (std::size_t p = 0; p < params.size(); ++p) {
    analytic.emplace_back(model->grad(p), model->grad(p) + params[p].count);
  }
  auto loss = [&] { return model->train_batch(access, x.data(), y.data(), n, 0.0f, {}); };
  const float eps = 1e-3f;  // small enough that few ReLUs switch, large enough for f32
  for (std::size_t p = 0; p < params.size(); ++p) {
    // A few elements of each parameter, including the first and last.
    for (std::size_t i : {std::size_t{0}, params[p].count / 2, params[p].count - 1}) {
      float& v = model->data(p)[i];
      const float saved = v;
      v = saved + eps;
      const double up = loss();
      v = saved - eps;
      const double down = loss();
      v = saved;
      const double numeric = (up - down) / (2.0 * eps);
      EXPECT_NEAR(analytic[p][i], numeric, 2e-3 + 2e-2 * std::abs(numeric))
          << params[p].name << "[" << i << "]";
    }
  }
}

}  // namespace
}  // namespace strata::dptest
