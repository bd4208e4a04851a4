// HMAC-SHA256 challenge/response over the job secret (OpenSSL). Messages carry a label first
// ("client", "server", "pair") so that a MAC made for one purpose is never accepted for another,
// e.g. a rogue store cannot reflect a client's own proof back to it.
#pragma once

#include "env.hpp"

#include <array>
#include <string>

namespace strata::allreduce_gloo {

using Nonce = std::array<unsigned char, 16>;
using Mac = std::array<unsigned char, 32>;

Nonce random_nonce();
// HMAC-SHA256(secret, label || parts...), each part taken as raw bytes.
Mac mac(const Secret& secret, const std::string& label, const std::string& message);
// Constant-time comparison (CRYPTO_memcmp).
bool same_mac(const Mac& a, const Mac& b);

inline std::string bytes(const Nonce& nonce) { return {nonce.begin(), nonce.end()}; }

}  // namespace strata::allreduce_gloo
