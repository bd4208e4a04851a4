// strata/comm/job_secret.hpp — header-only proofs of the job secret (STRATA_JOB_SECRET, made per
// job by strata-run) for comm plugins that exchange data with peers over TCP: random nonces and
// HMAC-SHA256 over a label and a message, compared in constant time. The label goes first, with a
// NUL after it, so that a MAC made for one purpose (e.g. "client") is never accepted for another
// (e.g. "server"): a rogue peer cannot reflect a party's own proof back to it.
// C++17 or later; OpenSSL's libcrypto (a plugin using this links OpenSSL::Crypto itself).
// `who` names the plugin in the (internal) error when OpenSSL fails.
#pragma once

#include <strata/plugin.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <array>
#include <cstddef>
#include <string>

namespace strata::sdk::comm {

using Nonce = std::array<unsigned char, 16>;
using Mac = std::array<unsigned char, 32>;

inline Nonce random_nonce(const std::string& who) {
  Nonce nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    fail(STRATA_ERR_INTERNAL, who + ": OpenSSL could not produce a random nonce");
  }
  return nonce;
}

// HMAC-SHA256(secret, label || NUL || message). `Secret` is any contiguous byte container with
// data() and size() (a std::array of bytes, a std::string).
template <class Secret>
Mac job_mac(const std::string& who, const Secret& secret, const std::string& label,
            const std::string& message) {
  const std::string input = label + '\0' + message;
  Mac out{};
  unsigned length = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(input.data()), input.size(), out.data(),
           &length) == nullptr ||
      length != out.size()) {
    fail(STRATA_ERR_INTERNAL, who + ": OpenSSL HMAC-SHA256 failed");
  }
  return out;
}

// Constant-time comparison (CRYPTO_memcmp).
inline bool same_mac(const Mac& a, const Mac& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// The same for a MAC as received off the wire; false when it is not a MAC's length.
inline bool same_mac(const std::string& received, const Mac& expected) {
  return received.size() == expected.size() &&
         CRYPTO_memcmp(received.data(), expected.data(), expected.size()) == 0;
}

// A nonce's or MAC's bytes, to send or to put into a message.
template <size_t N>
std::string bytes(const std::array<unsigned char, N>& raw) {
  return {raw.begin(), raw.end()};
}

}  // namespace strata::sdk::comm
