// The wire protocol between the TCP store's clients (tcp_store.cpp) and its server
// (store_server.cpp). Integers are little-endian u32; a "frame" is a u32 length and that many bytes.
//
// Mutual proof of the job secret, before anything else:
//   server -> client  server nonce (16 bytes)
//   client -> server  client nonce (16) | rank (u32) | HMAC(secret, "client", sn | cn | rank) (32)
//   server -> client  HMAC(secret, "server", cn | sn | rank) (32)
// Each side checks the other's MAC (CRYPTO_memcmp) and hangs up on a mismatch. The labels keep a
// rogue server from reflecting the client's proof; the fresh nonces keep recorded proofs useless.
//
// Then requests, each one byte and its frames; the server answers each with one frame:
//   'S' key value      -> "ok"                      (set)
//   'G' key            -> "1" value | "0"           (get: present or not)
//   'C' n key...       -> m (u32) index... (u32)    (check: the indices of the keys not yet set)
#pragma once

#include <chrono>

namespace strata::allreduce_gloo::store_protocol {

inline constexpr char kSet = 'S';
inline constexpr char kGet = 'G';
inline constexpr char kCheck = 'C';
// How long a new connection has to prove the secret before the server hangs up.
inline constexpr std::chrono::seconds kHandshakeTimeout{5};

}  // namespace strata::allreduce_gloo::store_protocol
