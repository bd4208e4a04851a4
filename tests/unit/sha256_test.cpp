// SHA-256 against the FIPS 180-2 test vectors, for strings and files.
#include "loader/sha256.hpp"
#include "test_util.hpp"

#include <gmock/gmock.h>

namespace strata::rt::test {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, FileMatchesStringDigestAcrossChunks) {
  TempDir dir;
  std::string content(200000, '\0');  // larger than one read chunk
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 31 % 251);
  const auto file = dir.write("blob.bin", content);
  EXPECT_EQ(sha256_file_hex(file), sha256_hex(content));
}

TEST(Sha256, MissingFileIsAnError) {
  EXPECT_THAT(error_of([] { sha256_file_hex("/no/such/file.so"); }),
              ::testing::HasSubstr("/no/such/file.so: cannot read for sha256"));
}

}  // namespace
}  // namespace strata::rt::test
