#include "auth.hpp"

#include <strata/plugin.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

namespace strata::allreduce_gloo {

Nonce random_nonce() {
  Nonce nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    sdk::fail(STRATA_ERR_INTERNAL, "gloo: OpenSSL could not produce a random nonce");
  }
  return nonce;
}

Mac mac(const Secret& secret, const std::string& label, const std::string& message) {
  const std::string input = label + '\0' + message;
  Mac out{};
  unsigned length = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(input.data()), input.size(), out.data(),
           &length) == nullptr ||
      length != out.size()) {
    sdk::fail(STRATA_ERR_INTERNAL, "gloo: OpenSSL HMAC-SHA256 failed");
  }
  return out;
}

bool same_mac(const Mac& a, const Mac& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

}  // namespace strata::allreduce_gloo
