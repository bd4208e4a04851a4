// An image-classification data set held in memory as raw bytes, as the idx files store it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace strata::fmnist {

struct Dataset {
  std::size_t count = 0;        // number of samples
  std::size_t features = 0;     // pixels per sample (rows × cols)
  std::size_t classes = 0;      // labels are 0 .. classes-1
  std::vector<uint8_t> pixels;  // count × features, row-major, 0..255
  std::vector<uint8_t> labels;  // count

  const uint8_t* sample(std::size_t i) const { return pixels.data() + i * features; }
};

enum class Split { train, test };

// The default folder of Debian's dataset-fashion-mnist package.
inline const char* default_data_dir() { return "/usr/share/datasets/fashion-mnist"; }

// Reads {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz from `dir`. Throws std::runtime_error
// naming the file and what was wrong with it (missing, not gzip, bad magic, truncated, ...).
Dataset load_fashion_mnist(const std::filesystem::path& dir, Split split);

// Deterministic stand-in with the same shape as Fashion-MNIST: each class is a fixed random
// prototype image plus per-sample noise, so a model can learn it in a few steps. For fast tests.
Dataset make_synthetic(std::size_t count, std::size_t features, std::size_t classes, uint64_t seed);

// Converts samples indices[0..n) to floats in [0, 1], row-major into `out` (n × features), and
// copies their labels into `labels_out` (n).
void gather_batch(const Dataset& data, const uint32_t* indices, std::size_t n, float* out,
                  uint8_t* labels_out);

// Same for the contiguous range [first, first + n).
void gather_range(const Dataset& data, std::size_t first, std::size_t n, float* out,
                  uint8_t* labels_out);

}  // namespace strata::fmnist
