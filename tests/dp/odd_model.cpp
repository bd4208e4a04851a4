// A synthetic model with awkwardly sized parameters, for partitioning tests: no size is a
// multiple of 2, 3 or 4, one parameter is a scalar, and the largest exceeds the small bucket
// capacity the test manifests set. Plain loops (no BLAS): it is small, and the result must not
// depend on a library's blocking.
//
//   u = x ⊙ gain                     group "input": gain[61]
//   h1 = relu(u·W1 + b1)             group "fc1":   W1[61×97], b1[97]
//   h2 = relu(h1·W2 + b2)            group "fc2":   W2[97×13], b2[13]
//   logits = t · (h2·W3 + b3)        group "head":  W3[13×7], b3[7], t[1]
#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "mlp.hpp"  // softmax_cross_entropy
#include "test_model.hpp"

namespace strata::dptest {
namespace {

constexpr std::size_t kIn = 61, kH1 = 97, kH2 = 13, kOut = 7;
enum Param : std::size_t { kGain, kW1, kB1, kW2, kB2, kW3, kB3, kTemp, kParamCount };
enum Group : std::size_t { kInputGroup, kFc1, kFc2, kHead };

// out (n × cols) = relu?(in (n × rows) · W (rows × cols) + b)
void dense_forward(const float* in, const float* w, const float* b, std::size_t n,
                   std::size_t rows, std::size_t cols, bool relu, float* out) {
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t c = 0; c < cols; ++c) {
      float sum = b[c];
      for (std::size_t r = 0; r < rows; ++r) sum += in[i * rows + r] * w[r * cols + c];
      out[i * cols + c] = relu ? std::max(sum, 0.0f) : sum;
    }
  }
}

// dW += inᵀ·delta, db += column sums of delta, and (if d_in) d_in = delta·Wᵀ masked where the
// input activation `mask_by` is not positive (ReLU'; null: no mask).
void dense_backward(const float* in, const float* delta, const float* w, std::size_t n,
                    std::size_t rows, std::size_t cols, float* dw, float* db, float* d_in,
                    const float* mask_by) {
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      float sum = 0.0f;
      for (std::size_t i = 0; i < n; ++i) sum += in[i * rows + r] * delta[i * cols + c];
      dw[r * cols + c] += sum;
    }
  }
  for (std::size_t c = 0; c < cols; ++c) {
    float sum = 0.0f;
    for (std::size_t i = 0; i < n; ++i) sum += delta[i * cols + c];
    db[c] += sum;
  }
  if (d_in == nullptr) return;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t r = 0; r < rows; ++r) {
      float sum = 0.0f;
      for (std::size_t c = 0; c < cols; ++c) sum += delta[i * cols + c] * w[r * cols + c];
      d_in[i * rows + r] = (mask_by != nullptr && mask_by[i * rows + r] <= 0.0f) ? 0.0f : sum;
    }
  }
}

void fill_uniform(std::vector<float>& v, double center, double limit, std::mt19937_64& rng) {
  for (float& x : v) {
    const double unit = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
    x = static_cast<float>(center + (2.0 * unit - 1.0) * limit);
  }
}

class OddModel : public TestModel {
 public:
  OddModel() {
    const std::size_t counts[kParamCount] = {kIn, kIn * kH1, kH1, kH1 * kH2, kH2, kH2 * kOut, kOut, 1};
    for (std::size_t p = 0; p < kParamCount; ++p) {
      data_[p].resize(counts[p]);
      grad_[p].resize(counts[p]);
    }
  }

  std::vector<ParamSpec> params() const override {
    static const char* names[kParamCount] = {"gain", "W1", "b1", "W2", "b2", "W3", "b3", "temperature"};
    std::vector<ParamSpec> specs;
    for (std::size_t p = 0; p < kParamCount; ++p) specs.push_back({names[p], data_[p].size()});
    return specs;
  }
  std::vector<GroupSpec> groups() const override {
    return {{"input", {kGain}}, {"fc1", {kW1, kB1}}, {"fc2", {kW2, kB2}}, {"head", {kW3, kB3, kTemp}}};
  }
  std::size_t inputs() const override { return kIn; }
  std::size_t classes() const override { return kOut; }
  float* data(std::size_t param) override { return data_.at(param).data(); }
  float* grad(std::size_t param) override { return grad_.at(param).data(); }

  void init(uint64_t seed) override {
    std::mt19937_64 rng(seed);
    fill_uniform(data_[kGain], 1.0, 0.1, rng);
    fill_uniform(data_[kW1], 0.0, std::sqrt(6.0 / kIn), rng);
    fill_uniform(data_[kB1], 0.0, 0.01, rng);
    fill_uniform(data_[kW2], 0.0, std::sqrt(6.0 / kH1), rng);
    fill_uniform(data_[kB2], 0.0, 0.01, rng);
    fill_uniform(data_[kW3], 0.0, std::sqrt(6.0 / (kH2 + kOut)), rng);
    fill_uniform(data_[kB3], 0.0, 0.01, rng);
    data_[kTemp][0] = 1.0f;
  }

  double train_batch(GroupAccess& access, const float* x, const uint8_t* y, std::size_t n,
                     float grad_multiplier,
                     const std::function<void(std::size_t)>& on_grad_ready) override {
    u_.resize(n * kIn);
    h1_.resize(n * kH1);
    h2_.resize(n * kH2);
    z_.resize(n * kOut);
    logits_.resize(n * kOut);
    // ---- forward, one group at a time ----
    GroupBuffers g = access.begin(kInputGroup, false);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t f = 0; f < kIn; ++f) u_[i * kIn + f] = x[i * kIn + f] * g.data[0][f];
    access.end(kInputGroup, false);
    g = access.begin(kFc1, false);
    dense_forward(u_.data(), g.data[0], g.data[1], n, kIn, kH1, true, h1_.data());
    access.end(kFc1, false);
    g = access.begin(kFc2, false);
    dense_forward(h1_.data(), g.data[0], g.data[1], n, kH1, kH2, true, h2_.data());
    access.end(kFc2, false);
    g = access.begin(kHead, false);
    dense_forward(h2_.data(), g.data[0], g.data[1], n, kH2, kOut, false, z_.data());
    for (std::size_t k = 0; k < n * kOut; ++k) logits_[k] = g.data[2][0] * z_[k];
    access.end(kHead, false);

    dlogits_.resize(n * kOut);
    const double loss = fmnist::softmax_cross_entropy(
        logits_.data(), y, n, kOut, grad_multiplier / static_cast<float>(n), dlogits_.data());
    auto ready = [&](std::initializer_list<std::size_t> params) {
      if (on_grad_ready)
        for (std::size_t p : params) on_grad_ready(p);
    };

    // ---- backward, groups in reverse; each computes the delta its predecessor needs ----
    dz_.resize(n * kOut);
    d2_.resize(n * kH2);
    d1_.resize(n * kH1);
    du_.resize(n * kIn);
    g = access.begin(kHead, true);
    float dt = 0.0f;
    for (std::size_t k = 0; k < n * kOut; ++k) {
      dt += dlogits_[k] * z_[k];
      dz_[k] = g.data[2][0] * dlogits_[k];
    }
    g.grad[2][0] += dt;
    dense_backward(h2_.data(), dz_.data(), g.data[0], n, kH2, kOut, g.grad[0], g.grad[1],
                   d2_.data(), h2_.data());
    ready({kW3, kB3, kTemp});
    access.end(kHead, true);
    g = access.begin(kFc2, true);
    dense_backward(h1_.data(), d2_.data(), g.data[0], n, kH1, kH2, g.grad[0], g.grad[1],
                   d1_.data(), h1_.data());
    ready({kW2, kB2});
    access.end(kFc2, true);
    g = access.begin(kFc1, true);
    dense_backward(u_.data(), d1_.data(), g.data[0], n, kIn, kH1, g.grad[0], g.grad[1], du_.data(),
                   nullptr);
    ready({kW1, kB1});
    access.end(kFc1, true);
    g = access.begin(kInputGroup, true);
    for (std::size_t f = 0; f < kIn; ++f) {
      float sum = 0.0f;
      for (std::size_t i = 0; i < n; ++i) sum += du_[i * kIn + f] * x[i * kIn + f];
      g.grad[0][f] += sum;
    }
    ready({kGain});
    access.end(kInputGroup, true);
    return loss;
  }

 private:
  std::array<std::vector<float>, kParamCount> data_, grad_;
  std::vector<float> u_, h1_, h2_, z_, logits_, dlogits_, dz_, d2_, d1_, du_;  // per batch
};

}  // namespace

std::unique_ptr<TestModel> make_odd_model() { return std::make_unique<OddModel>(); }

}  // namespace strata::dptest
