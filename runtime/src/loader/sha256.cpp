// SHA-256 through OpenSSL's EVP interface (the low-level SHA256_* calls are deprecated in 3.0).
#include "loader/sha256.hpp"

#include "error.hpp"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace strata::rt {
namespace {

// Feeds chunks to one EVP digest context and renders the result as hex.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), &EVP_MD_CTX_free) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) {
      throw Error(STRATA_ERR_INTERNAL, "sha256: OpenSSL could not initialise a digest");
    }
  }
  void update(const void* data, size_t size) {
    if (EVP_DigestUpdate(ctx_.get(), data, size) != 1) {
      throw Error(STRATA_ERR_INTERNAL, "sha256: OpenSSL digest update failed");
    }
  }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), digest, &size) != 1) {
      throw Error(STRATA_ERR_INTERNAL, "sha256: OpenSSL digest finalisation failed");
    }
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * size);
    for (unsigned int i = 0; i < size; ++i) {
      out += kDigits[digest[i] >> 4];
      out += kDigits[digest[i] & 0xf];
    }
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

}  // namespace

std::string sha256_hex(std::string_view data) {
  Sha256 sha;
  sha.update(data.data(), data.size());
  return sha.hex();
}

std::string sha256_file_hex(const std::filesystem::path& file) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(file.c_str(), "rb"), &std::fclose);
  if (!in) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                file.string() + ": cannot read for sha256: " + std::strerror(errno));
  }
  Sha256 sha;
  char chunk[1 << 16];
  size_t got = 0;
  while ((got = std::fread(chunk, 1, sizeof chunk, in.get())) > 0) sha.update(chunk, got);
  if (std::ferror(in.get())) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT, file.string() + ": read error while hashing");
  }
  return sha.hex();
}

}  // namespace strata::rt
