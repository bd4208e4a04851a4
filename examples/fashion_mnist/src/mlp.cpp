#include "mlp.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace strata::fmnist {
namespace {

// Uniform in [-limit, limit) from the raw bits of mt19937_64, whose sequence the standard fixes
// (std::uniform_real_distribution's algorithm is library-specific).
void fill_uniform(std::vector<float>& v, float limit, std::mt19937_64& rng) {
  for (auto& x : v) {
    const double unit = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
    x = static_cast<float>((2.0 * unit - 1.0) * limit);
  }
}

int to_int(std::size_t n) { return static_cast<int>(n); }

}  // namespace

Mlp::Mlp(std::vector<std::size_t> sizes) : sizes_(std::move(sizes)) {
  if (sizes_.size() < 2) throw std::invalid_argument("Mlp: need at least input and output sizes");
  for (std::size_t l = 0; l < layers(); ++l) {
    const std::size_t in = sizes_[l], out = sizes_[l + 1];
    const std::string id = std::to_string(l + 1);
    params_.push_back({"W" + id, std::vector<float>(in * out), std::vector<float>(in * out)});
    params_.push_back({"b" + id, std::vector<float>(out), std::vector<float>(out)});
  }
  activations_.resize(layers());
}

void Mlp::init(uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (std::size_t l = 0; l < layers(); ++l) {
    const double in = static_cast<double>(sizes_[l]), out = static_cast<double>(sizes_[l + 1]);
    const bool last = l + 1 == layers();
    const double limit = last ? std::sqrt(6.0 / (in + out)) : std::sqrt(6.0 / in);
    fill_uniform(weight(l).data, static_cast<float>(limit), rng);
    std::fill(bias(l).data.begin(), bias(l).data.end(), 0.0f);
  }
}

LayerBuffers Mlp::begin_layer(std::size_t layer, bool backward) {
  if (access_ != nullptr) return access_->begin(layer, backward);
  LayerBuffers b;
  b.weight = weight(layer).data.data();
  b.bias = bias(layer).data.data();
  if (backward) {
    b.weight_grad = weight(layer).grad.data();
    b.bias_grad = bias(layer).grad.data();
  }
  return b;
}

void Mlp::end_layer(std::size_t layer, bool backward) {
  if (access_ != nullptr) access_->end(layer, backward);
}

const float* Mlp::layer_input(const float* x, std::size_t layer) const {
  return layer == 0 ? x : activations_[layer - 1].data();
}

void Mlp::forward(const float* x, std::size_t n) {
  for (std::size_t l = 0; l < layers(); ++l) {
    const std::size_t in = sizes_[l], out = sizes_[l + 1];
    auto& z = activations_[l];
    z.resize(n * out);
    const LayerBuffers p = begin_layer(l, false);
    for (std::size_t i = 0; i < n; ++i) std::copy(p.bias, p.bias + out, z.begin() + i * out);
    // z (n × out) += input (n × in) · W (in × out)
    if (n > 0) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, to_int(n), to_int(out), to_int(in),
                  1.0f, layer_input(x, l), to_int(in), p.weight, to_int(out), 1.0f, z.data(),
                  to_int(out));
    }
    end_layer(l, false);
    if (l + 1 < layers()) {
      for (auto& v : z) v = std::max(v, 0.0f);
    }
  }
}

double Mlp::train_batch(const float* x, const uint8_t* y, std::size_t n, float grad_multiplier,
                        const std::function<void(std::size_t)>& on_grad_ready) {
  if (n == 0) throw std::invalid_argument("Mlp::train_batch: empty batch");
  forward(x, n);
  delta_.resize(n * classes());
  const double mean_loss =
      softmax_cross_entropy(activations_.back().data(), y, n, classes(),
                            grad_multiplier / static_cast<float>(n), delta_.data());

  for (std::size_t l = layers(); l-- > 0;) {
    const std::size_t in = sizes_[l], out = sizes_[l + 1];
    const LayerBuffers p = begin_layer(l, true);
    // dW (in × out) += input^T (in × n) · delta (n × out)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, to_int(in), to_int(out), to_int(n), 1.0f,
                layer_input(x, l), to_int(in), delta_.data(), to_int(out), 1.0f, p.weight_grad,
                to_int(out));
    for (std::size_t i = 0; i < n; ++i) {
      const float* row = delta_.data() + i * out;
      for (std::size_t j = 0; j < out; ++j) p.bias_grad[j] += row[j];
    }
    // Hand the finished gradients over before the rest of backward so reduction can overlap it.
    if (on_grad_ready) {
      on_grad_ready(2 * l);
      on_grad_ready(2 * l + 1);
    }
    if (l > 0) {
      // delta_prev (n × in) = delta (n × out) · W^T (out × in), masked by ReLU'(pre-activation).
      delta_prev_.resize(n * in);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, to_int(n), to_int(in), to_int(out),
                  1.0f, delta_.data(), to_int(out), p.weight, to_int(out), 0.0f,
                  delta_prev_.data(), to_int(in));
    }
    end_layer(l, true);
    if (l == 0) break;
    const auto& act = activations_[l - 1];
    for (std::size_t k = 0; k < n * in; ++k) {
      if (act[k] <= 0.0f) delta_prev_[k] = 0.0f;
    }
    std::swap(delta_, delta_prev_);
  }
  return mean_loss;
}

double Mlp::loss(const float* x, const uint8_t* y, std::size_t n) {
  forward(x, n);
  return softmax_cross_entropy(activations_.back().data(), y, n, classes(), 0.0f, nullptr);
}

std::size_t Mlp::count_correct(const float* x, const uint8_t* y, std::size_t n) {
  forward(x, n);
  const float* logits = activations_.back().data();
  std::size_t correct = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float* row = logits + i * classes();
    const auto best = std::max_element(row, row + classes()) - row;
    if (best == y[i]) ++correct;
  }
  return correct;
}

double softmax_cross_entropy(const float* logits, const uint8_t* y, std::size_t n,
                             std::size_t classes, float scale, float* dlogits) {
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const float* row = logits + i * classes;
    const float max = *std::max_element(row, row + classes);  // subtract for stability
    double sum = 0.0;
    for (std::size_t j = 0; j < classes; ++j) sum += std::exp(static_cast<double>(row[j] - max));
    const double log_sum = std::log(sum);
    total += log_sum - static_cast<double>(row[y[i]] - max);
    if (dlogits != nullptr) {
      float* d = dlogits + i * classes;
      for (std::size_t j = 0; j < classes; ++j) {
        const double p = std::exp(static_cast<double>(row[j] - max) - log_sum);
        d[j] = static_cast<float>(p - (j == y[i] ? 1.0 : 0.0)) * scale;
      }
    }
  }
  return total / static_cast<double>(n);
}

}  // namespace strata::fmnist
