#include "view_mlp.hpp"

#include <cblas.h>
#include <sys/mman.h>
#include <unistd.h>

#include <strata/half.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

namespace strata::bench {
namespace {

// f16 values are stored as their bits and converted by the SDK's scalar conversions
// (strata/half.hpp): clang before 15 has no _Float16 on x86.

int to_int(std::size_t n) { return static_cast<int>(n); }

std::size_t dtype_bytes(int32_t dtype) { return dtype == STRATA_F16 ? 2 : 4; }

PageBuffer& allocate(InitialValues& storage, std::size_t bytes) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  PageBuffer buffer;
  buffer.bytes = (bytes + page - 1) / page * page;
  buffer.data.reset(std::aligned_alloc(page, buffer.bytes));
  if (!buffer.data) throw std::bad_alloc();
  storage.push_back(std::move(buffer));
  return storage.back();
}

// Uniform in [-limit, limit) from mt19937_64's raw bits, written in the model dtype.
void fill_uniform(PageBuffer& b, std::size_t count, int32_t dtype, double limit, std::mt19937_64& rng) {
  for (std::size_t i = 0; i < count; ++i) {
    const double unit = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    const auto value = static_cast<float>((2.0 * unit - 1.0) * limit);
    if (dtype == STRATA_F16) {
      static_cast<uint16_t*>(b.data.get())[i] = float_to_f16(value);
    } else {
      static_cast<float*>(b.data.get())[i] = value;
    }
  }
}

}  // namespace

ViewMlp::ViewMlp(Runtime& runtime, InitialValues& storage, std::vector<std::size_t> sizes,
                 uint64_t seed)
    : runtime_(runtime), sizes_(std::move(sizes)), dtype_(runtime.training().model_dtype) {
  if (dtype_ != STRATA_F32 && dtype_ != STRATA_F16) {
    throw std::runtime_error(std::string("the manifest's model dtype is ") +
                             strata_dtype_name(dtype_) + "; this benchmark computes f32 or f16");
  }
  storage.reserve(storage.size() + 2 * sizes_.size());  // PageBuffer pointers must stay put
  std::mt19937_64 rng(seed);
  for (std::size_t l = 0; l + 1 < sizes_.size(); ++l) {
    Layer layer{sizes_[l], sizes_[l + 1], 0, 0, 0, nullptr, nullptr};
    const std::string id = std::to_string(l + 1);
    layer.weight_init = &allocate(storage, layer.in * layer.out * dtype_bytes(dtype_));
    layer.bias_init = &allocate(storage, layer.out * dtype_bytes(dtype_));
    fill_uniform(*layer.weight_init, layer.in * layer.out, dtype_, std::sqrt(6.0 / double(layer.in)), rng);
    fill_uniform(*layer.bias_init, layer.out, dtype_, 0.0, rng);
    const auto dtype = static_cast<strata_dtype>(dtype_);
    layer.weight = runtime.register_param("W" + id, dtype, layer.weight_init->data.get(), nullptr,
                                          layer.in * layer.out);
    layer.bias = runtime.register_param("b" + id, dtype, layer.bias_init->data.get(), nullptr, layer.out);
    layers_.push_back(layer);
  }
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    layers_[l].group = runtime.define_group("fc" + std::to_string(l + 1), {layers_[l].weight, layers_[l].bias});
  }
  runtime.finalize();
  activations_.resize(layers_.size());
}

std::size_t ViewMlp::parameters() const {
  std::size_t total = 0;
  for (const Layer& l : layers_) total += l.in * l.out + l.out;
  return total;
}

std::size_t ViewMlp::drop_unused_initial_values() {
  std::size_t dropped = 0;
  for (const Layer& l : layers_) {
    for (auto [index, buffer] : {std::pair{l.weight, l.weight_init}, std::pair{l.bias, l.bias_init}}) {
      if (runtime_.view(index).data != nullptr) continue;  // still the live parameter
      if (madvise(buffer->data.get(), buffer->bytes, MADV_DONTNEED) == 0) dropped += buffer->bytes;
    }
  }
  return dropped;
}

const float* ViewMlp::widen(const ParamView& v, std::vector<float>& scratch) const {
  if (v.data == nullptr) throw std::runtime_error("a gathered parameter has no data");
  if (dtype_ == STRATA_F32) return static_cast<const float*>(v.data);
  scratch.resize(v.count);
  const auto* h = static_cast<const uint16_t*>(v.data);
  for (std::size_t i = 0; i < v.count; ++i) scratch[i] = f16_to_float(h[i]);
  return scratch.data();
}

void ViewMlp::add_grad(const ParamView& v, const float* grad, std::size_t count) const {
  if (v.grad == nullptr) throw std::runtime_error("a layer gathered for backward has no gradient");
  auto* h = static_cast<uint16_t*>(v.grad);
  for (std::size_t i = 0; i < count; ++i) h[i] = float_to_f16(f16_to_float(h[i]) + grad[i]);
}

double ViewMlp::train_batch(std::size_t n, float grad_multiplier) {
  std::mt19937_64 rng(n);
  input_.resize(n * sizes_.front());
  target_.resize(n * sizes_.back());
  for (float& x : input_) x = static_cast<float>(rng() >> 40) * 0x1.0p-24f;
  for (float& t : target_) t = static_cast<float>(rng() >> 40) * 0x1.0p-24f;

  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const Layer& L = layers_[l];
    GatheredGroup gathered(runtime_, L.group);
    const float* w = widen(runtime_.view(L.weight), weight_scratch_);
    const float* b = widen(runtime_.view(L.bias), bias_scratch_);
    const float* x = l == 0 ? input_.data() : activations_[l - 1].data();
    auto& z = activations_[l];
    z.resize(n * L.out);
    for (std::size_t i = 0; i < n; ++i) std::copy(b, b + L.out, z.begin() + long(i * L.out));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, to_int(n), to_int(L.out), to_int(L.in),
                1.0f, x, to_int(L.in), w, to_int(L.out), 1.0f, z.data(), to_int(L.out));
    if (l + 1 < layers_.size())
      for (float& v : z) v = std::max(v, 0.0f);
    gathered.release();
  }

  const auto& out = activations_.back();
  double loss = 0;
  delta_.resize(out.size());
  for (std::size_t k = 0; k < out.size(); ++k) {
    const double d = double(out[k]) - double(target_[k]);
    loss += 0.5 * d * d / double(n);
    delta_[k] = static_cast<float>(d / double(n)) * grad_multiplier;
  }

  for (std::size_t l = layers_.size(); l-- > 0;) {
    const Layer& L = layers_[l];
    GatheredGroup gathered(runtime_, L.group, STRATA_GATHER_FOR_BACKWARD);
    const ParamView wv = runtime_.view(L.weight), bv = runtime_.view(L.bias);
    const float* x = l == 0 ? input_.data() : activations_[l - 1].data();
    const bool f32 = dtype_ == STRATA_F32;
    float* dw = f32 ? static_cast<float*>(wv.grad) : nullptr;
    if (f32 && dw == nullptr) throw std::runtime_error("a layer gathered for backward has no gradient");
    if (!f32) grad_scratch_.assign(L.in * L.out, 0.0f), dw = grad_scratch_.data();
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, to_int(L.in), to_int(L.out), to_int(n), 1.0f,
                x, to_int(L.in), delta_.data(), to_int(L.out), 1.0f, dw, to_int(L.out));
    if (!f32) add_grad(wv, dw, L.in * L.out);
    std::vector<float> db(L.out, 0.0f);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < L.out; ++j) db[j] += delta_[i * L.out + j];
    if (f32) {
      float* g = static_cast<float*>(bv.grad);
      for (std::size_t j = 0; j < L.out; ++j) g[j] += db[j];
    } else {
      add_grad(bv, db.data(), L.out);
    }
    if (l > 0) {
      const float* w = widen(wv, weight_scratch_);
      delta_prev_.resize(n * L.in);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, to_int(n), to_int(L.in), to_int(L.out), 1.0f,
                  delta_.data(), to_int(L.out), w, to_int(L.out), 0.0f, delta_prev_.data(), to_int(L.in));
      const auto& act = activations_[l - 1];
      for (std::size_t k = 0; k < n * L.in; ++k)
        if (act[k] <= 0.0f) delta_prev_[k] = 0.0f;
      std::swap(delta_, delta_prev_);
    }
    gathered.release();
  }
  return loss;
}

}  // namespace strata::bench
