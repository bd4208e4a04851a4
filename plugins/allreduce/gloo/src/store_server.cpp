#include "store_server.hpp"

#include "store_protocol.hpp"

#include <strata_common/job_secret.hpp>

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace strata::allreduce_gloo {
namespace {

using namespace store_protocol;
// The shared TCP socket and job-secret proofs (plugins/common/net), also used by the NCCL plugin.
using namespace common::net;

// How often blocked threads look at stopping_.
constexpr int kPollMs = 100;

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, kPollMs) > 0;
}

}  // namespace

StoreServer::StoreServer(const std::string& ip, uint16_t port, const Secret& secret,
                         const sdk::Host& host)
    : ip_(ip), secret_(secret), host_(host) {
  try {
    listener_ = listen_on(ip, port);
  } catch (const SocketError& e) {
    if (e.error_number == EADDRINUSE) {
      sdk::fail(STRATA_ERR_COMM, "gloo store: MASTER_PORT " + std::to_string(port) + " on " + ip +
                                     " is in use (another job? pick another with strata-run "
                                     "--master-port)");
    }
    sdk::fail(STRATA_ERR_COMM, "gloo store: cannot listen on " + ip + ":" + std::to_string(port) +
                                   " (MASTER_ADDR/MASTER_PORT): " + e.what());
  }
  acceptor_ = std::thread([this] { accept_loop(); });
}

StoreServer::~StoreServer() {
  stopping_ = true;
  acceptor_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    threads.swap(connections_);
  }
  for (std::thread& t : threads) t.join();
}

std::shared_ptr<StoreServer> StoreServer::shared(const std::string& ip, uint16_t port,
                                                 const Secret& secret, const sdk::Host& host) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<StoreServer>> servers;
  std::lock_guard lock(mutex);
  const std::string key = ip + ":" + std::to_string(port);
  if (auto server = servers[key].lock()) return server;
  auto server = std::make_shared<StoreServer>(ip, port, secret, host);
  servers[key] = server;
  return server;
}

void StoreServer::accept_loop() {
  while (!stopping_) {
    if (!readable(listener_.fd())) continue;
    Socket client(accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC));
    if (client.fd() < 0) continue;
    std::lock_guard lock(mutex_);
    connections_.emplace_back([this, s = std::move(client)]() mutable { serve(std::move(s)); });
  }
}

bool StoreServer::handshake(const Socket& socket) {
  const auto deadline = Clock::now() + kHandshakeTimeout;
  const Nonce server_nonce = random_nonce(kSecretErrorPrefix);
  socket.write_all(bytes(server_nonce), deadline);
  const std::string hello = socket.read_exact(16 + 4 + 32, deadline);
  const std::string client_nonce = hello.substr(0, 16), rank = hello.substr(16, 4);
  Mac claimed{};
  std::memcpy(claimed.data(), hello.data() + 20, claimed.size());
  const Mac expected =
      job_mac(kSecretErrorPrefix, secret_, "client", bytes(server_nonce) + client_nonce + rank);
  if (!same_mac(claimed, expected)) {
    return false;
  }
  const Mac proof =
      job_mac(kSecretErrorPrefix, secret_, "server", client_nonce + bytes(server_nonce) + rank);
  socket.write_all(std::string(proof.begin(), proof.end()), deadline);
  return true;
}

void StoreServer::serve(Socket socket) {
  const std::string peer = peer_name(socket.fd());
  std::string why = "it did not prove the job secret";
  bool proven = false;
  try {
    proven = handshake(socket);
  } catch (const std::exception& e) {
    why += std::string(" (") + e.what() + ")";
  }
  if (!proven) {
    host_.log(STRATA_LOG_WARN, "gloo store: refused a connection from %s: %s", peer.c_str(),
              why.c_str());
    return;
  }
  try {
    while (!stopping_) {
      if (readable(socket.fd()) && !answer(socket)) return;
    }
  } catch (const std::exception& e) {
    // A rank that exits mid-request; the job's own timeouts report what is missing.
    host_.log(STRATA_LOG_DEBUG, "gloo store: connection from %s ended: %s", peer.c_str(), e.what());
  }
}

bool StoreServer::answer(const Socket& socket) {
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  char op = 0;
  const ssize_t n = recv(socket.fd(), &op, 1, 0);
  if (n <= 0) return false;
  if (op == kSet) {
    std::string key = socket.read_frame(deadline), value = socket.read_frame(deadline);
    {
      std::lock_guard lock(mutex_);
      data_[std::move(key)] = std::move(value);
    }
    socket.write_frame("ok", deadline);
  } else if (op == kGet) {
    const std::string key = socket.read_frame(deadline);
    std::string reply = "0";
    {
      std::lock_guard lock(mutex_);
      if (auto it = data_.find(key); it != data_.end()) reply = "1" + it->second;
    }
    socket.write_frame(reply, deadline);
  } else if (op == kCheck) {
    const uint32_t count = read_u32(socket.read_exact(4, deadline));
    std::vector<std::string> keys;
    for (uint32_t i = 0; i < count; ++i) keys.push_back(socket.read_frame(deadline));
    std::string missing;
    uint32_t found = 0;
    {
      std::lock_guard lock(mutex_);
      for (uint32_t i = 0; i < count; ++i) {
        if (data_.count(keys[i]) == 0) missing += u32(i), ++found;
      }
    }
    socket.write_frame(u32(found) + missing, deadline);
  } else {
    throw SocketError("unknown request " + std::to_string(static_cast<int>(op)));
  }
  return true;
}

}  // namespace strata::allreduce_gloo
