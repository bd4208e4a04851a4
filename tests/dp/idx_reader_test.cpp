// The idx reader: real data when installed, and every malformed-file case with a clear message.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dataset.hpp"

namespace strata::fmnist {
namespace {

namespace fs = std::filesystem;

std::vector<unsigned char> idx(std::vector<uint32_t> dims, std::size_t payload, uint8_t value,
                               unsigned char type = 0x08) {
  std::vector<unsigned char> bytes = {0, 0, type, static_cast<unsigned char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8)
      bytes.push_back(static_cast<unsigned char>(d >> shift));
  }
  bytes.insert(bytes.end(), payload, value);
  return bytes;
}

void write_gz(const fs::path& path, const std::vector<unsigned char>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), int(bytes.size()));
  gzclose(f);
}

class IdxReader : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("strata_idx_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write_pair(std::vector<unsigned char> images, std::vector<unsigned char> labels) {
    write_gz(dir_ / "t10k-images-idx3-ubyte.gz", images);
    write_gz(dir_ / "t10k-labels-idx1-ubyte.gz", labels);
  }

  std::string load_error() {
    try {
      load_fashion_mnist(dir_, Split::test);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "no error";
  }

  fs::path dir_;
};

TEST_F(IdxReader, ReadsAWellFormedPair) {
  write_pair(idx({3, 2, 2}, 12, 255), idx({3}, 3, 9));
  const Dataset d = load_fashion_mnist(dir_, Split::test);
  EXPECT_EQ(d.count, 3u);
  EXPECT_EQ(d.features, 4u);
  EXPECT_EQ(d.labels, (std::vector<uint8_t>{9, 9, 9}));
  std::vector<float> x(12);
  std::vector<uint8_t> y(3);
  gather_range(d, 0, 3, x.data(), y.data());
  EXPECT_EQ(x[11], 1.0f);
}

TEST_F(IdxReader, MissingFileNamesItAndTheFlag) {
  const std::string e = load_error();
  EXPECT_NE(e.find("t10k-images-idx3-ubyte.gz"), std::string::npos) << e;
  EXPECT_NE(e.find("--data-dir"), std::string::npos) << e;
}

TEST_F(IdxReader, TruncatedPixels) {
  write_pair(idx({3, 2, 2}, 10, 1), idx({3}, 3, 1));
  const std::string e = load_error();
  EXPECT_NE(e.find("truncated: expected 12 bytes of pixels, found 10"), std::string::npos) << e;
}

TEST_F(IdxReader, WrongMagic) {
  write_pair(idx({3, 2, 2}, 12, 1, 0x0D), idx({3}, 3, 1));
  EXPECT_NE(load_error().find("not an idx file"), std::string::npos) << load_error();
}

TEST_F(IdxReader, CorruptGzipStream) {
  write_pair(idx({3, 2, 2}, 12, 1), idx({3}, 3, 1));
  const auto path = dir_ / "t10k-images-idx3-ubyte.gz";
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(12);  // inside the deflate data, past the 10-byte gzip header
  f.write("\xff\xff\xff\xff", 4);
  f.close();
  const std::string e = load_error();
  EXPECT_NE(e.find("t10k-images-idx3-ubyte.gz"), std::string::npos) << e;
  EXPECT_TRUE(e.find("corrupt") != std::string::npos || e.find("truncated") != std::string::npos)
      << e;
}

TEST_F(IdxReader, LabelOutOfRangeAndCountMismatch) {
  write_pair(idx({3, 2, 2}, 12, 1), idx({3}, 3, 10));
  EXPECT_NE(load_error().find("label 10 of sample 0 is outside 0..9"), std::string::npos)
      << load_error();
  write_pair(idx({3, 2, 2}, 12, 1), idx({2}, 2, 1));
  EXPECT_NE(load_error().find("has 2 labels but t10k-images-idx3-ubyte.gz has 3 images"),
            std::string::npos)
      << load_error();
}

TEST_F(IdxReader, TrailingBytes) {
  write_pair(idx({3, 2, 2}, 13, 1), idx({3}, 3, 1));
  EXPECT_NE(load_error().find("unexpected bytes after the data"), std::string::npos)
      << load_error();
}

TEST(FashionMnist, InstalledDataSetHasTheKnownShape) {
  if (!fs::exists(fs::path(default_data_dir()) / "train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  const Dataset test = load_fashion_mnist(default_data_dir(), Split::test);
  EXPECT_EQ(test.count, 10000u);
  EXPECT_EQ(test.features, 784u);
  std::vector<std::size_t> per_class(10);
  for (uint8_t l : test.labels) ++per_class[l];
  for (std::size_t c : per_class) EXPECT_EQ(c, 1000u);  // the test split is balanced
}

TEST(Synthetic, IsDeterministicAndLabelled) {
  const Dataset a = make_synthetic(50, 16, 10, 1), b = make_synthetic(50, 16, 10, 1);
  EXPECT_EQ(a.pixels, b.pixels);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(a.pixels, make_synthetic(50, 16, 10, 2).pixels);
  for (uint8_t l : a.labels) EXPECT_LT(l, 10);
}

}  // namespace
}  // namespace strata::fmnist
