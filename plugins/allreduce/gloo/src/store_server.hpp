// Rank 0's side of the TCP rendezvous store: a key-value map served on MASTER_ADDR:MASTER_PORT
// by a thread, one more thread per connection (a connection per rank and plugin instance).
// Connections that do not prove the job secret within a few seconds are closed and logged at
// warning level with their address; the job goes on. Protocol: store_protocol.hpp.
//
// One server per process and address (shared()): several plugin instances in one process use the
// same MASTER_PORT, each under its own key prefix.
#pragma once

#include "env.hpp"

#include <strata_common/tcp_socket.hpp>
#include <strata/plugin.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::allreduce_gloo {

// Our TCP sockets are plugins/common/net's (shared with the NCCL plugin's unique-id exchange).
using common::net::Clock;
using common::net::Socket;
using common::net::SocketError;

class StoreServer {
 public:
  // Binds ip:port; a port in use fails with STRATA_ERR_COMM saying so.
  StoreServer(const std::string& ip, uint16_t port, const Secret& secret, const sdk::Host& host);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  // The server on ip:port, started if none of this process serves there yet.
  static std::shared_ptr<StoreServer> shared(const std::string& ip, uint16_t port,
                                             const Secret& secret, const sdk::Host& host);

 private:
  void accept_loop();
  void serve(Socket socket);
  // Answers one request; false when the client hung up.
  bool answer(const Socket& socket);
  bool handshake(const Socket& socket);

  std::string ip_;
  Secret secret_;
  sdk::Host host_;
  Socket listener_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;  // guards data_ and connections_
  std::map<std::string, std::string> data_;
  std::vector<std::thread> connections_;
  std::thread acceptor_;  // last: starts once the members above exist
};

}  // namespace strata::allreduce_gloo
