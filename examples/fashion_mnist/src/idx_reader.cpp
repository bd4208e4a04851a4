// Reader for the gzipped idx files Fashion-MNIST (and MNIST) ship in.
// Format: big-endian magic (0x0000 08 <ndims>, 0x08 = unsigned byte), ndims big-endian uint32
// sizes, then the bytes. Every way a file can be wrong becomes one sentence naming the file.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "dataset.hpp"

namespace strata::fmnist {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw std::runtime_error(path.string() + ": " + what);
}

// Reads exactly `bytes` bytes, or fails saying how many were there.
void read_exact(gzFile file, const std::filesystem::path& path, void* out, std::size_t bytes,
                const char* what) {
  auto* dst = static_cast<unsigned char*>(out);
  std::size_t done = 0;
  while (done < bytes) {
    const auto chunk = static_cast<unsigned>(std::min<std::size_t>(bytes - done, 1u << 30));
    const int got = gzread(file, dst + done, chunk);
    if (got < 0) {
      int code = 0;
      fail(path, std::string("corrupt gzip data while reading ") + what + " (" +
                     gzerror(file, &code) + ")");
    }
    if (got == 0) {
      fail(path, std::string("truncated: expected ") + std::to_string(bytes) + " bytes of " + what +
                     ", found " + std::to_string(done));
    }
    done += static_cast<std::size_t>(got);
  }
}

uint32_t big_endian(const unsigned char* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

// Opens the file and reads the header; returns the dimensions. `ndims` is what the caller expects.
std::vector<uint32_t> read_header(gzFile file, const std::filesystem::path& path, int ndims) {
  unsigned char magic[4];
  read_exact(file, path, magic, 4, "header");
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] != ndims) {
    fail(path, "not an idx file of unsigned bytes with " + std::to_string(ndims) +
                   " dimensions (magic " + std::to_string(big_endian(magic)) + ", expected " +
                   std::to_string(0x0800 + ndims) + ")");
  }
  std::vector<uint32_t> dims(static_cast<std::size_t>(ndims));
  for (auto& d : dims) {
    unsigned char b[4];
    read_exact(file, path, b, 4, "header");
    d = big_endian(b);
  }
  return dims;
}

GzFile open(const std::filesystem::path& path) {
  errno = 0;
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file) {
    fail(path, std::string("cannot open (") + (errno ? std::strerror(errno) : "gzopen failed") +
                   "); install Debian's dataset-fashion-mnist or pass --data-dir");
  }
  gzbuffer(file.get(), 1u << 20);
  return file;
}

void expect_end(gzFile file, const std::filesystem::path& path) {
  unsigned char extra;
  if (gzread(file, &extra, 1) != 0) fail(path, "unexpected bytes after the data");
}

std::vector<uint8_t> read_labels(const std::filesystem::path& path, std::size_t classes) {
  GzFile file = open(path);
  const auto dims = read_header(file.get(), path, 1);
  std::vector<uint8_t> labels(dims[0]);
  read_exact(file.get(), path, labels.data(), labels.size(), "labels");
  expect_end(file.get(), path);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= classes) {
      fail(path, "label " + std::to_string(labels[i]) + " of sample " + std::to_string(i) +
                     " is outside 0.." + std::to_string(classes - 1));
    }
  }
  return labels;
}

}  // namespace

Dataset load_fashion_mnist(const std::filesystem::path& dir, Split split) {
  const std::string prefix = split == Split::train ? "train" : "t10k";
  const auto images_path = dir / (prefix + "-images-idx3-ubyte.gz");
  const auto labels_path = dir / (prefix + "-labels-idx1-ubyte.gz");

  Dataset data;
  data.classes = 10;
  GzFile images = open(images_path);
  const auto dims = read_header(images.get(), images_path, 3);
  if (dims[1] == 0 || dims[2] == 0) fail(images_path, "image size is zero");
  data.count = dims[0];
  data.features = std::size_t{dims[1]} * dims[2];
  data.pixels.resize(data.count * data.features);
  read_exact(images.get(), images_path, data.pixels.data(), data.pixels.size(), "pixels");
  expect_end(images.get(), images_path);

  data.labels = read_labels(labels_path, data.classes);
  if (data.labels.size() != data.count) {
    fail(labels_path, "has " + std::to_string(data.labels.size()) + " labels but " +
                          images_path.filename().string() + " has " + std::to_string(data.count) +
                          " images");
  }
  return data;
}

}  // namespace strata::fmnist
