// strata_common/job_secret.hpp — proofs of the job secret (STRATA_JOB_SECRET, made per job by
// strata-run) for the tree's comm plugins that exchange data with peers over TCP: random nonces
// and HMAC-SHA256 over a label and a message, compared in constant time. The label goes first,
// with a NUL after it, so that a MAC made for one purpose (e.g. "client") is never accepted for
// another (e.g. "server"): a rogue peer cannot reflect a party's own proof back to it.
// Library strata_common_net (plugins/common, never installed): OpenSSL's libcrypto stays inside
// it, so this header needs no OpenSSL header. `who` names the plugin in the (internal) error when
// OpenSSL fails (sdk::Error, STRATA_ERR_INTERNAL). Every function is thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <string>

namespace strata::common::net {

using Nonce = std::array<unsigned char, 16>;
using Mac = std::array<unsigned char, 32>;

Nonce random_nonce(const std::string& who);

// HMAC-SHA256(secret, label || NUL || message) over `secret_size` bytes at `secret`.
Mac job_mac(const std::string& who, const void* secret, std::size_t secret_size,
            const std::string& label, const std::string& message);

// The same for any contiguous byte container with data() and size() (a std::array of bytes, a
// std::string).
template <class Secret>
Mac job_mac(const std::string& who, const Secret& secret, const std::string& label,
            const std::string& message) {
  return job_mac(who, secret.data(), secret.size(), label, message);
}

// Constant-time comparison (CRYPTO_memcmp).
bool same_mac(const Mac& a, const Mac& b);

// The same for a MAC as received off the wire; false when it is not a MAC's length.
bool same_mac(const std::string& received, const Mac& expected);

// A nonce's or MAC's bytes, to send or to put into a message.
template <std::size_t N>
std::string bytes(const std::array<unsigned char, N>& raw) {
  return {raw.begin(), raw.end()};
}

}  // namespace strata::common::net
