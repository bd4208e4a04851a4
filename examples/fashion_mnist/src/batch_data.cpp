// Turning stored samples into model input, and a synthetic data set for tests.
#include <random>

#include "dataset.hpp"

namespace strata::fmnist {

void gather_batch(const Dataset& data, const uint32_t* indices, std::size_t n, float* out,
                  uint8_t* labels_out) {
  constexpr float kScale = 1.0f / 255.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const uint8_t* src = data.sample(indices[i]);
    float* dst = out + i * data.features;
    for (std::size_t f = 0; f < data.features; ++f) dst[f] = static_cast<float>(src[f]) * kScale;
    labels_out[i] = data.labels[indices[i]];
  }
}

void gather_range(const Dataset& data, std::size_t first, std::size_t n, float* out,
                  uint8_t* labels_out) {
  std::vector<uint32_t> indices(n);
  for (std::size_t i = 0; i < n; ++i) indices[i] = static_cast<uint32_t>(first + i);
  gather_batch(data, indices.data(), n, out, labels_out);
}

Dataset make_synthetic(std::size_t count, std::size_t features, std::size_t classes,
                       uint64_t seed) {
  // mt19937_64's sequence is fixed by the standard; taking its raw bits (not a distribution,
  // whose algorithm is library-specific) keeps the data identical on every platform.
  std::mt19937_64 rng(seed);
  auto byte = [&rng] { return static_cast<int>(rng() >> 56); };

  std::vector<uint8_t> prototypes(classes * features);
  for (auto& p : prototypes) p = static_cast<uint8_t>(byte());

  Dataset data;
  data.count = count;
  data.features = features;
  data.classes = classes;
  data.pixels.resize(count * features);
  data.labels.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const auto label = static_cast<uint8_t>(rng() % classes);
    data.labels[i] = label;
    const uint8_t* proto = prototypes.data() + label * features;
    for (std::size_t f = 0; f < features; ++f) {
      const int noisy = proto[f] + (byte() - 128) / 2;  // noise of ±64 around the prototype
      data.pixels[i * features + f] = static_cast<uint8_t>(noisy < 0     ? 0
                                                           : noisy > 255 ? 255
                                                                         : noisy);
    }
  }
  return data;
}

}  // namespace strata::fmnist
