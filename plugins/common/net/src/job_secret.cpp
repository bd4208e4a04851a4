#include <strata_common/job_secret.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <strata/plugin.hpp>

namespace strata::common::net {

Nonce random_nonce(const std::string& who) {
  Nonce nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    sdk::fail(STRATA_ERR_INTERNAL, who + ": OpenSSL could not produce a random nonce");
  }
  return nonce;
}

Mac job_mac(const std::string& who, const void* secret, std::size_t secret_size,
            const std::string& label, const std::string& message) {
  const std::string input = label + '\0' + message;
  Mac out{};
  unsigned length = 0;
  if (HMAC(EVP_sha256(), secret, static_cast<int>(secret_size),
           reinterpret_cast<const unsigned char*>(input.data()), input.size(), out.data(),
           &length) == nullptr ||
      length != out.size()) {
    sdk::fail(STRATA_ERR_INTERNAL, who + ": OpenSSL HMAC-SHA256 failed");
  }
  return out;
}

bool same_mac(const Mac& a, const Mac& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool same_mac(const std::string& received, const Mac& expected) {
  return received.size() == expected.size() &&
         CRYPTO_memcmp(received.data(), expected.data(), expected.size()) == 0;
}

}  // namespace strata::common::net
