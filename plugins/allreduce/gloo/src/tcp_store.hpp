// A rank's side of the TCP rendezvous store, as the gloo::rendezvous::Store that connectFullMesh
// uses. It connects to rank 0's server (retrying until the timeout: the server may start later),
// proves the job secret and checks the server's proof (store_protocol.hpp), so a rank never hands
// its addresses to an impostor. Used from one thread (create()'s).
#pragma once

#include "env.hpp"

#include <strata_common/tcp_socket.hpp>

#include <gloo/rendezvous/store.h>

#include <chrono>

namespace strata::allreduce_gloo {

// Our TCP sockets are plugins/common/net's (shared with the NCCL plugin's unique-id exchange).
using common::net::Clock;
using common::net::Socket;
using common::net::SocketError;

class TcpStore : public gloo::rendezvous::Store {
 public:
  TcpStore(const Env& env, std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  // On timeout: STRATA_ERR_COMM naming the ranks that did not arrive (connectFullMesh waits for
  // one key per rank, "<prefix>/<rank>"), e.g. "gloo rendezvous: ranks 2, 3 did not arrive
  // within 30 s (MASTER_ADDR 10.218.0.1:29500)".
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  // The keys among `keys` that are not set yet.
  std::vector<std::string> check(const std::vector<std::string>& keys);
  std::string describe_missing(const std::vector<std::string>& keys);
  [[noreturn]] void lost(const std::exception& e) const;
  std::string where() const;

  const Env& env_;
  std::chrono::milliseconds timeout_;
  Socket socket_;
};

}  // namespace strata::allreduce_gloo
